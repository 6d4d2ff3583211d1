package signature

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

// SignManifest returns a Sigstore bundle (JSON) whose message signature
// is k's over manifest: messageDigest is the manifest's SHA-256, i.e. its
// OCI digest, and the verification material names k by its ID.
func (k *Key) SignManifest(ctx context.Context, manifest []byte) ([]byte, error) {
	b, err := sign.Bundle(&sign.PlainData{Data: manifest}, k.kp, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return protojson.Marshal(b)
}

// Sign pulls the artifact ref names, signs its manifest with k and
// attaches the bundle to it as a referrer. It returns the digest signed
// and the referrer's. c should not verify (Options.Verify): the artifact
// is not signed yet.
func Sign(ctx context.Context, c *oci.Client, ref string, k *Key) (signed, referrer digest.Digest, err error) {
	a, err := c.Pull(ctx, ref)
	if err != nil {
		return "", "", err
	}
	bundle, err := k.SignManifest(ctx, a.Manifest())
	if err != nil {
		return "", "", err
	}
	referrer, err = c.Attach(ctx, a.Ref, BundleMediaType, BundleMediaType, bundle)
	if err != nil {
		return "", "", err
	}
	return a.Digest, referrer, nil
}
