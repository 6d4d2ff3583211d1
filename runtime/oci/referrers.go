package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// maxReferrerSize bounds a referrer's blob (a signature bundle is a few
// KiB) and its manifest.
const maxReferrerSize = 1 << 20

// Manifest returns the artifact's manifest as the registry served it, the
// bytes its Digest is the digest of.
func (a *Artifact) Manifest() []byte { return a.manifest }

// Referrer is an artifact attached to another: one blob of a given
// artifact type, read and verified against its digest.
type Referrer struct {
	// Digest is the referrer manifest's digest.
	Digest       digest.Digest
	ArtifactType string
	// MediaType and Data are the referrer's single layer.
	MediaType string
	Data      []byte

	manifest []byte // the referrer manifest, as fetched or stored
}

// referrersRepo returns the repository of ref and the descriptor of the
// manifest it names, resolved once.
func (c *Client) referrersRepo(ctx context.Context, ref string) (*remote.Repository, ocispec.Descriptor, error) {
	r, err := parse(ref)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	repo, err := c.repository(r)
	if err != nil {
		return nil, ocispec.Descriptor{}, refErr(ref, err)
	}
	if c.opts.NoReferrersAPI {
		// Only the first call counts; a fresh repository each time.
		_ = repo.SetReferrersCapability(false)
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		return nil, desc, refErr(ref, err)
	}
	if want, err := r.Digest(); err == nil && desc.Digest != want {
		return nil, desc, refErr(ref, fmt.Errorf("%w: the registry resolved it to %s", ErrRefused, desc.Digest))
	}
	return repo, desc, nil
}

// Attach pushes data, of media type mediaType, as an OCI 1.1 artifact of
// type artifactType whose subject is the manifest ref names, and returns
// the referrer's manifest digest. oras-go uses the registry's referrers
// API, or, for a registry without one (or with Options.NoReferrersAPI),
// the tag schema: an index tagged sha256-<hex of the subject> listing the
// referrers, updated in place.
func (c *Client) Attach(ctx context.Context, ref, artifactType, mediaType string, data []byte) (digest.Digest, error) {
	repo, subject, err := c.referrersRepo(ctx, ref)
	if err != nil {
		return "", err
	}
	layer := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.Push(ctx, layer, bytes.NewReader(data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return "", refErr(ref, fmt.Errorf("pushing %s: %w", layer.Digest, err))
	}
	empty := ocispec.DescriptorEmptyJSON
	if ok, err := repo.Exists(ctx, empty); err != nil || !ok {
		if err := repo.Push(ctx, empty, bytes.NewReader(empty.Data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return "", refErr(ref, fmt.Errorf("pushing the empty config: %w", err))
		}
	}
	empty.Data = nil
	subj := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType,
		Config: empty, Layers: []ocispec.Descriptor{layer}, Subject: &subj}
	m.SchemaVersion = 2
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	mdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType,
		Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	// Push (not PushReference): oras-go sees the subject and, without a
	// referrers API, updates the sha256-<hex> index.
	if err := repo.Push(ctx, mdesc, bytes.NewReader(raw)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return "", refErr(ref, fmt.Errorf("pushing the referrer: %w", err))
	}
	return mdesc.Digest, nil
}

// Referrers returns the referrers of artifactType of the manifest ref
// names, each fetched and checked against its digest, and that manifest's
// digest. A referrer that is not one blob of a bounded size is skipped:
// anyone who may push to the repository may attach anything.
func (c *Client) Referrers(ctx context.Context, ref, artifactType string) ([]Referrer, digest.Digest, error) {
	repo, subject, err := c.referrersRepo(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	var descs []ocispec.Descriptor
	err = repo.Referrers(ctx, subject, artifactType, func(page []ocispec.Descriptor) error {
		descs = append(descs, page...)
		if len(descs) > 100 {
			return fmt.Errorf("%w: more than 100 referrers of type %s", ErrRefused, artifactType)
		}
		return nil
	})
	if err != nil {
		return nil, subject.Digest, refErr(ref, fmt.Errorf("listing referrers: %w", err))
	}
	var out []Referrer
	for _, d := range descs {
		if d.MediaType != ocispec.MediaTypeImageManifest || d.Size > maxReferrerSize {
			continue
		}
		raw, err := fetchVerified(ctx, repo, d)
		if err != nil {
			return nil, subject.Digest, refErr(ref, fmt.Errorf("fetching referrer %s: %w", d.Digest, err))
		}
		var m ocispec.Manifest
		if json.Unmarshal(raw, &m) != nil || len(m.Layers) != 1 || m.Layers[0].Size > maxReferrerSize ||
			m.Subject == nil || m.Subject.Digest != subject.Digest {
			continue
		}
		data, err := fetchVerified(ctx, repo.Blobs(), m.Layers[0])
		if err != nil {
			return nil, subject.Digest, refErr(ref, fmt.Errorf("fetching referrer %s: %w", d.Digest, err))
		}
		at := m.ArtifactType
		if at == "" {
			at = m.Config.MediaType
		}
		out = append(out, Referrer{Digest: d.Digest, ArtifactType: at, MediaType: m.Layers[0].MediaType, Data: data, manifest: raw})
	}
	// Kept for offline use (StoredReferrers, Save). A store that cannot
	// keep them costs the offline case only: the answer stands.
	if s := c.opts.Store; s != nil && len(out) > 0 {
		if err := s.putReferrers(repositoryOf(repo.Reference), subject.Digest, out); err != nil {
			c.opts.Logger.Warn("cannot keep signatures in the local store; verifying offline will not find them",
				"ref", ref, "store", s.Dir(), "error", err.Error())
		}
	}
	return out, subject.Digest, nil
}
