package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// imageFlags are the flags of the commands that serve a provider
// directory (serve, controller) for its image entries
// ("NAME.provider.yaml"): the store and registry access of the OCI
// commands (addOCIFlags, whose names and defaults they share) and how
// often tags are resolved again.
type imageFlags struct {
	oci         ociFlags // its log and timeout are unused: the command's logger and pullTimeout apply
	poll        time.Duration
	pullTimeout time.Duration
}

func addImageFlags(fs *flag.FlagSet) *imageFlags {
	f := &imageFlags{}
	f.oci.registerAccess(fs, "image entries: ")
	fs.DurationVar(&f.poll, "image-poll-interval", time.Minute, "image entries: how often tags (pullPolicy Always) are resolved again and failed pulls retried; 0 disables")
	fs.DurationVar(&f.pullTimeout, "image-pull-timeout", 5*time.Minute, "image entries: bound on one resolve or pull")
	return f
}

// signatureVerifier checks an image's artifact against the signature
// policy of its verify block, fetching signatures with the client the
// artifact was pulled with (a WasmProvider's pull Secret; c otherwise).
// Key and trusted-root files of an image entry are relative to its
// directory. A verify block from code — a WasmProvider — must carry its
// keys inline: whoever writes one must not make the controller read its
// own files.
func signatureVerifier(c *oci.Client, logger *slog.Logger) registry.Verifier {
	return func(ctx context.Context, req registry.VerifyRequest) error {
		p, err := signaturePolicy(req.Verify, req.Entry)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		client := req.Client
		if client == nil {
			client = c
		}
		res, err := signature.Verify(ctx, client, repoOf(req.Ref)+"@"+req.Digest, p)
		if err != nil {
			return err
		}
		attrs := []any{"provider", req.Provider, "digest", req.Digest, "matched", strings.Join(res.Matched, ", "),
			"bundles", res.Bundles, "from", res.Source}
		if !res.FirstVerified.IsZero() {
			attrs = append(attrs, "firstVerified", res.FirstVerified.Format(time.RFC3339))
		}
		logger.Info("signature verified", attrs...)
		return nil
	}
}

// signaturePolicy parses the verify block of the image entry at entry
// ("" for one given by code, which must name no file). It is the
// registry's WithVerifyCheck, so a block that can never verify is an
// invalid entry as soon as it is read.
func signaturePolicy(verify []byte, entry string) (*signature.Policy, error) {
	dir := ""
	if entry != "" {
		dir = filepath.Dir(entry)
	}
	p, err := signature.ParsePolicy(verify, dir)
	if err != nil {
		return nil, err
	}
	if entry == "" {
		if err := inlineOnly(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// inlineOnly refuses a signature policy that names files.
func inlineOnly(p *signature.Policy) error {
	if p.TrustedRoot != "" {
		return errors.New("trustedRoot names a file; a verify block given by a resource takes no file names")
	}
	for _, r := range append(slices.Clone(p.AnyOf), p.AllOf...) {
		if r.PublicKeyFile != "" {
			return errors.New("publicKeyFile names a file; a verify block given by a resource takes its keys inline (publicKey)")
		}
	}
	return nil
}
