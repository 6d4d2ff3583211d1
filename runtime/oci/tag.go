package oci

import (
	"bytes"
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/content"
)

// Tag points the tag dst names at the manifest src names (a tag or a
// digest) and returns the manifest's digest. The manifest's bytes are
// fetched, checked against their digest and put again under the new tag:
// no blob is sent, and the digest stays the same, so signatures attached
// to it hold for the new tag too. dst must be a tag in src's repository:
// registries do not share blobs across repositories, and copying an
// artifact is a pull and a push, not a tag.
func (c *Client) Tag(ctx context.Context, src, dst string) (digest.Digest, error) {
	sr, err := parse(src)
	if err != nil {
		return "", err
	}
	dr, err := parse(dst)
	if err != nil {
		return "", err
	}
	if dr.Reference == "" || isDigest(dr) {
		return "", fmt.Errorf("%s: the target must name a tag (REPOSITORY:TAG)", dst)
	}
	if sr.Registry != dr.Registry || sr.Repository != dr.Repository {
		return "", fmt.Errorf("%w: %s is in repository %s/%s, %s in %s/%s: a tag points within one repository (pull and push to copy)",
			ErrRefused, dst, dr.Registry, dr.Repository, src, sr.Registry, sr.Repository)
	}
	repo, err := c.repository(sr)
	if err != nil {
		return "", refErr(src, err)
	}
	desc, rc, err := repo.FetchReference(ctx, sr.Reference)
	if err != nil {
		return "", refErr(src, err)
	}
	defer rc.Close()
	if desc.Size > maxManifestSize {
		return "", refErr(src, fmt.Errorf("%w: manifest of %d bytes", ErrRefused, desc.Size))
	}
	if want, err := sr.Digest(); err == nil && desc.Digest != want {
		return "", refErr(src, fmt.Errorf("%w: the registry resolved it to %s", ErrRefused, desc.Digest))
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return "", refErr(src, fmt.Errorf("%w: reading the manifest: %w", ErrRefused, err))
	}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(raw), dr.Reference); err != nil {
		return "", refErr(dst, fmt.Errorf("tagging %s: %w", desc.Digest, err))
	}
	return desc.Digest, nil
}
