package oci

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// maxDiscovered bounds the referrers Discover lists: anyone who may push
// to the repository may attach any number of them.
const maxDiscovered = 1000

// Attached is an artifact attached to another (a referrer), as the
// registry lists it: nothing of it is fetched.
type Attached struct {
	Digest       digest.Digest
	ArtifactType string
	MediaType    string
	Size         int64
	Annotations  map[string]string
}

// Discover lists the referrers of the manifest ref names, of every
// artifact type ("" for artifactType) or of one, and returns that
// manifest's digest. Unlike Referrers, which reads the signatures it
// returns and skips what is not one small blob, it fetches nothing: it
// shows what is attached, whatever its shape.
func (c *Client) Discover(ctx context.Context, ref, artifactType string) ([]Attached, digest.Digest, error) {
	repo, subject, err := c.referrersRepo(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	var out []Attached
	err = repo.Referrers(ctx, subject, artifactType, func(page []ocispec.Descriptor) error {
		for _, d := range page {
			out = append(out, Attached{Digest: d.Digest, ArtifactType: d.ArtifactType, MediaType: d.MediaType,
				Size: d.Size, Annotations: d.Annotations})
		}
		if len(out) > maxDiscovered {
			return fmt.Errorf("%w: more than %d referrers", ErrRefused, maxDiscovered)
		}
		return nil
	})
	if err != nil {
		return nil, subject.Digest, refErr(ref, fmt.Errorf("listing referrers: %w", err))
	}
	return out, subject.Digest, nil
}
