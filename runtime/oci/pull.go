package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// Resolve returns the manifest digest ref names: a digest reference as it
// is (no request), a tag as the registry resolves it now.
func (c *Client) Resolve(ctx context.Context, ref string) (digest.Digest, error) {
	r, err := parse(ref)
	if err != nil {
		return "", err
	}
	if d, err := r.Digest(); err == nil {
		return d, nil
	}
	repo, err := c.repository(r)
	if err != nil {
		return "", refErr(ref, err)
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		return "", refErr(ref, err)
	}
	c.rememberTag(ref, desc.Digest)
	return desc.Digest, nil
}

// rememberTag keeps what the tag ref resolved to, for LastResolved. A
// store that cannot keep it costs the next offline start only.
func (c *Client) rememberTag(ref string, d digest.Digest) {
	if s := c.opts.Store; s != nil {
		if err := s.rememberTag(ref, d); err != nil {
			c.opts.Logger.Warn("cannot record the tag's resolution in the local store", "ref", ref, "digest", d.String(), "error", err.Error())
		}
	}
}

// Pull returns the module ref names. A reference by digest is served from
// the store when it has the artifact, without asking the registry; a tag
// is resolved once, the digest it names logged, and the artifact fetched
// by that digest. Everything fetched is verified against its digest before
// it is returned or stored; nothing is stored from a refused artifact.
// With Options.Verify, every artifact, the store's too, is returned only
// if Verify accepts it, and a fetched one is stored only then.
func (c *Client) Pull(ctx context.Context, ref string) (_ *Artifact, err error) {
	r, err := parse(ref)
	if err != nil {
		return nil, err
	}
	if d, err := r.Digest(); err == nil {
		if a, ok := c.fromStore(r, d); ok {
			if err := c.verify(ctx, a); err != nil {
				return nil, refErr(ref, err)
			}
			return a, nil
		}
	}
	repo, err := c.repository(r)
	if err != nil {
		return nil, refErr(ref, err)
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		return nil, refErr(ref, err)
	}
	if !isDigest(r) {
		c.opts.Logger.Info("resolved tag", "ref", ref, "digest", desc.Digest.String())
		defer func() {
			if err == nil {
				c.rememberTag(ref, desc.Digest)
			}
		}()
	} else if want, _ := r.Digest(); desc.Digest != want {
		return nil, refErr(ref, fmt.Errorf("%w: the registry resolved it to %s", ErrRefused, desc.Digest))
	}
	a, err := c.fetch(ctx, repo, r, desc)
	if err != nil {
		return nil, refErr(ref, err)
	}
	// Verified before it is stored: a refused artifact leaves nothing.
	if err := c.verify(ctx, a); err != nil {
		return nil, refErr(ref, err)
	}
	// Verified, it serves whether or not the store can keep it (a full
	// disk): refusing it would lose a good artifact for a cache's sake.
	// What is lost is the next offline start; that is said.
	if err := c.store(a); err != nil {
		c.opts.Logger.Warn("cannot keep the artifact in the local store; it is returned, but a pull by digest will need the registry",
			"ref", a.Ref, "store", c.opts.Store.Dir(), "error", err.Error())
	}
	return a, nil
}

// ErrUnverified: Options.Verify refused the artifact.
var ErrUnverified = errors.New("verification failed")

// verify asks Options.Verify about a.
func (c *Client) verify(ctx context.Context, a *Artifact) error {
	if c.opts.Verify == nil {
		return nil
	}
	if err := c.opts.Verify(ctx, c, a); err != nil {
		return fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	return nil
}

// fetch fetches and verifies the manifest desc, its config and module.
func (c *Client) fetch(ctx context.Context, repo *remote.Repository, r registry.Reference, desc ocispec.Descriptor) (*Artifact, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("%w: not a Wasm artifact: the manifest is %q, not %s", ErrRefused, desc.MediaType, ocispec.MediaTypeImageManifest)
	}
	if desc.Size > maxManifestSize {
		return nil, fmt.Errorf("%w: manifest of %d bytes", ErrRefused, desc.Size)
	}
	raw, err := fetchVerified(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching the manifest: %w", err)
	}
	m, layer, err := parseManifest(raw, c.opts.MaxBlobSize)
	if err != nil {
		return nil, err
	}
	cfg, err := fetchVerified(ctx, repo.Blobs(), m.Config)
	if err != nil {
		return nil, fmt.Errorf("fetching the config: %w", err)
	}
	// A module is megabytes: a line before and after, so a slow registry
	// shows as a slow fetch, not as silence.
	start := time.Now()
	c.opts.Logger.Info("fetching module", "ref", r.String(), "digest", layer.Digest.String(), "bytes", layer.Size)
	wasm, err := fetchVerified(ctx, repo.Blobs(), layer)
	if err != nil {
		return nil, fmt.Errorf("fetching the module: %w", err)
	}
	c.opts.Logger.Info("fetched module", "ref", r.String(), "digest", layer.Digest.String(), "took", time.Since(start).Round(time.Millisecond).String())
	if err := checkModule(wasm); err != nil {
		return nil, err
	}
	return c.artifact(r, desc.Digest, m, layer, raw, cfg, wasm), nil
}

// fetchVerified reads desc's content, refusing content longer than or
// different from what desc says.
func fetchVerified(ctx context.Context, f content.Fetcher, desc ocispec.Descriptor) ([]byte, error) {
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %s does not match its descriptor: %v", ErrRefused, desc.Digest, err)
		}
		return nil, err
	}
	return b, nil
}

func (c *Client) artifact(r registry.Reference, d digest.Digest, m ocispec.Manifest, layer ocispec.Descriptor, raw, cfg, wasm []byte) *Artifact {
	pinned := r
	pinned.Reference = d.String()
	return &Artifact{Ref: pinned.String(), Digest: d, LayerDigest: layer.Digest, Wasm: wasm,
		Annotations: m.Annotations, manifest: raw, config: cfg}
}

// fromStore returns the artifact d from the store, if all of it is there
// and intact.
func (c *Client) fromStore(r registry.Reference, d digest.Digest) (*Artifact, bool) {
	s := c.opts.Store
	if s == nil {
		return nil, false
	}
	raw, ok := s.Get(d, maxManifestSize)
	if !ok {
		return nil, false
	}
	m, layer, err := parseManifest(raw, c.opts.MaxBlobSize)
	if err != nil {
		return nil, false
	}
	cfg, ok := s.Get(m.Config.Digest, maxManifestSize)
	if !ok {
		return nil, false
	}
	wasm, ok := s.Get(layer.Digest, c.opts.MaxBlobSize)
	if !ok || checkModule(wasm) != nil {
		return nil, false
	}
	return c.artifact(r, d, m, layer, raw, cfg, wasm), true
}

// store keeps a verified artifact: module and config before the manifest,
// so a manifest in the store always finds its blobs.
func (c *Client) store(a *Artifact) error {
	s := c.opts.Store
	if s == nil {
		return nil
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(a.manifest, &m); err != nil {
		return err
	}
	if err := s.Put(a.LayerDigest, a.Wasm); err != nil {
		return err
	}
	if err := s.Put(m.Config.Digest, a.config); err != nil {
		return err
	}
	if err := s.Put(a.Digest, a.manifest); err != nil {
		return err
	}
	_, err := s.GC()
	return err
}

// Push pushes wasm as a Wasm artifact to ref, which names a tag, and
// returns the manifest's digest. Blobs the repository has are not sent
// again.
func (c *Client) Push(ctx context.Context, wasm []byte, ref string) (digest.Digest, error) {
	r, err := parse(ref)
	if err != nil {
		return "", err
	}
	if isDigest(r) || r.Reference == "" {
		return "", fmt.Errorf("%s: push to a tag (registry/repository:tag)", ref)
	}
	if int64(len(wasm)) > c.opts.MaxBlobSize {
		return "", refErr(ref, fmt.Errorf("%w: the module is %d bytes, over the limit of %d", ErrRefused, len(wasm), c.opts.MaxBlobSize))
	}
	manifest, cfg, layer, err := build(wasm)
	if err != nil {
		return "", refErr(ref, err)
	}
	repo, err := c.repository(r)
	if err != nil {
		return "", refErr(ref, err)
	}
	cfgDesc := ocispec.Descriptor{MediaType: MediaTypeConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
	}{{layer, wasm}, {cfgDesc, cfg}} {
		if ok, err := repo.Exists(ctx, b.desc); err == nil && ok {
			continue
		}
		if err := repo.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return "", refErr(ref, fmt.Errorf("pushing %s: %w", b.desc.Digest, err))
		}
	}
	mdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	if err := repo.PushReference(ctx, mdesc, bytes.NewReader(manifest), r.Reference); err != nil {
		return "", refErr(ref, fmt.Errorf("pushing the manifest: %w", err))
	}
	a := &Artifact{Digest: mdesc.Digest, LayerDigest: layer.Digest, Wasm: wasm, manifest: manifest, config: cfg}
	if err := c.store(a); err != nil { // pushed all the same
		c.opts.Logger.Warn("cannot keep the pushed artifact in the local store", "ref", ref, "store", c.opts.Store.Dir(), "error", err.Error())
	}
	return mdesc.Digest, nil
}
