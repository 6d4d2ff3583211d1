package oci

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Save writes the artifacts refs name (pulled, or from the store) to w as
// an OCI image layout in a tar: oci-layout, index.json naming each
// reference (org.opencontainers.image.ref.name) and blobs/sha256/…, with
// each artifact's referrers — its signatures — as manifests whose subject
// is the artifact, so that a site without the registry verifies exactly
// as one with it. Referrers are asked of the registry and, when it cannot
// be reached, taken from the store. It returns the artifacts written.
func (c *Client) Save(ctx context.Context, refs []string, w io.Writer) ([]*Artifact, error) {
	var arts []*Artifact
	referrers := map[digest.Digest][]Referrer{}
	for _, ref := range refs {
		a, err := c.Pull(ctx, ref)
		if err != nil {
			return nil, err
		}
		arts = append(arts, a)
		rs, err := c.referrersForSave(ctx, a)
		if err != nil {
			return nil, err
		}
		referrers[a.Digest] = rs
	}
	tw := tar.NewWriter(w)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err := put(ocispec.ImageLayoutFile, layout); err != nil {
		return nil, err
	}
	index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	index.SchemaVersion = 2
	written := map[digest.Digest]bool{}
	for i, a := range arts {
		index.Manifests = append(index.Manifests, ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageManifest, Digest: a.Digest, Size: int64(len(a.manifest)),
			Annotations: map[string]string{ocispec.AnnotationRefName: refs[i]},
		})
		var m ocispec.Manifest
		if err := json.Unmarshal(a.manifest, &m); err != nil {
			return nil, err
		}
		for _, b := range []struct {
			d    digest.Digest
			data []byte
		}{{a.Digest, a.manifest}, {m.Config.Digest, a.config}, {a.LayerDigest, a.Wasm}} {
			if written[b.d] {
				continue
			}
			written[b.d] = true
			if err := put(path.Join("blobs", b.d.Algorithm().String(), b.d.Encoded()), b.data); err != nil {
				return nil, err
			}
		}
		for _, r := range referrers[a.Digest] {
			if written[r.Digest] {
				continue
			}
			index.Manifests = append(index.Manifests, ocispec.Descriptor{
				MediaType: ocispec.MediaTypeImageManifest, ArtifactType: r.ArtifactType,
				Digest: r.Digest, Size: int64(len(r.manifest)),
			})
			empty := ocispec.DescriptorEmptyJSON
			for _, b := range [][]byte{r.manifest, r.Data, empty.Data} {
				d := digest.FromBytes(b)
				if written[d] {
					continue
				}
				written[d] = true
				if err := put(path.Join("blobs", d.Algorithm().String(), d.Encoded()), b); err != nil {
					return nil, err
				}
			}
		}
	}
	ib, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	if err := put(ocispec.ImageIndexFile, ib); err != nil {
		return nil, err
	}
	return arts, tw.Close()
}

// referrersForSave returns a's referrers: the registry's and the
// store's. A registry that cannot be reached is not an error when the
// store has them (saving is what one does before leaving the network),
// but a registry's refusal is.
func (c *Client) referrersForSave(ctx context.Context, a *Artifact) ([]Referrer, error) {
	online, _, err := c.Referrers(ctx, a.Ref, "")
	stored, serr := c.StoredReferrers(a.Ref, "")
	if serr != nil {
		c.opts.Logger.Warn("leaving out damaged signatures of the local store", "ref", a.Ref, "error", serr.Error())
	}
	if err != nil {
		if c.opts.Store == nil {
			return nil, fmt.Errorf("saving the signatures of %s: %w", a.Ref, err)
		}
		c.opts.Logger.Warn("cannot list the artifact's signatures in the registry; saving those of the local store",
			"ref", a.Ref, "stored", len(stored), "error", err.Error())
	}
	out := online
	for _, r := range stored {
		if !slices.ContainsFunc(out, func(o Referrer) bool { return o.Digest == r.Digest }) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Loaded is one artifact Load put in the store.
type Loaded struct {
	// Name is the reference the bundle named it by ("" if none), Ref
	// the same pinned to its digest.
	Name, Ref string
	Digest    digest.Digest
	// Referrers is how many referrers (signatures) of it the bundle had.
	Referrers int
}

// Load reads an OCI image layout tar (as Save writes it), verifies every
// blob against its digest and every manifest as a Wasm artifact, and puts
// them in the store, where Pull by digest finds them with no registry.
// Nothing is stored unless the whole bundle is sound.
func (c *Client) Load(r io.Reader) ([]Loaded, error) {
	if c.opts.Store == nil {
		return nil, errors.New("load: the client has no store")
	}
	blobs := map[digest.Digest][]byte{}
	var index []byte
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the bundle: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Size > c.opts.MaxBlobSize {
			return nil, fmt.Errorf("bundle: %s: %w: %d bytes, over the limit of %d", name, ErrRefused, h.Size, c.opts.MaxBlobSize)
		}
		if total += h.Size; total > 4*c.opts.Store.maxBytes {
			return nil, fmt.Errorf("bundle: %w: over %d bytes", ErrRefused, 4*c.opts.Store.maxBytes)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", name, err)
		}
		switch {
		case name == ocispec.ImageIndexFile:
			index = b
		case strings.HasPrefix(name, "blobs/sha256/"):
			d := digest.NewDigestFromEncoded(digest.SHA256, strings.TrimPrefix(name, "blobs/sha256/"))
			if d.Validate() != nil || digest.FromBytes(b) != d {
				return nil, fmt.Errorf("bundle: %s: %w: content does not match its digest", name, ErrRefused)
			}
			blobs[d] = b
		}
	}
	if index == nil {
		return nil, fmt.Errorf("bundle: %w: no index.json (not an OCI image layout)", ErrRefused)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, fmt.Errorf("bundle: index.json: %w", err)
	}
	var out []Loaded
	var arts []*Artifact
	referrers := map[digest.Digest][]Referrer{}
	for _, desc := range idx.Manifests {
		name := desc.Annotations[ocispec.AnnotationRefName]
		label := name
		if label == "" {
			label = desc.Digest.String()
		}
		raw, ok := blobs[desc.Digest]
		if !ok {
			return nil, fmt.Errorf("bundle: %s: manifest %s is missing", label, desc.Digest)
		}
		if subject, ok := subjectOf(raw); ok {
			r, layer, ok := referrerOf(desc.Digest, raw, subject)
			if !ok {
				return nil, fmt.Errorf("bundle: %s: %w: a referrer that is not one blob of at most %d bytes", label, ErrRefused, maxReferrerSize)
			}
			if r.Data, ok = blobs[layer]; !ok {
				return nil, fmt.Errorf("bundle: %s: the blob of referrer %s is missing", label, desc.Digest)
			}
			referrers[subject] = append(referrers[subject], r)
			continue
		}
		m, layer, err := parseManifest(raw, c.opts.MaxBlobSize)
		if err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", label, err)
		}
		cfg, wasm := blobs[m.Config.Digest], blobs[layer.Digest]
		if cfg == nil || wasm == nil {
			return nil, fmt.Errorf("bundle: %s: a blob of the artifact is missing", label)
		}
		if err := checkModule(wasm); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", label, err)
		}
		a := &Artifact{Digest: desc.Digest, LayerDigest: layer.Digest, Wasm: wasm, manifest: raw, config: cfg}
		l := Loaded{Name: name, Digest: desc.Digest}
		if pr, err := parse(name); err == nil {
			pr.Reference = desc.Digest.String()
			l.Ref = pr.String()
		}
		arts, out = append(arts, a), append(out, l)
	}
	// Referrers are kept per repository: each goes with the artifacts of
	// the bundle that are its subject, in the repositories they are named
	// in.
	for subject := range referrers {
		if !slices.ContainsFunc(out, func(l Loaded) bool { return l.Digest == subject && l.Ref != "" }) {
			return nil, fmt.Errorf("bundle: %w: referrers of %s, which is not an artifact of the bundle named by a reference", ErrRefused, subject)
		}
	}
	for i, a := range arts {
		if err := c.store(a); err != nil {
			return nil, fmt.Errorf("bundle: storing %s: %w", a.Digest, err)
		}
		rs := referrers[a.Digest]
		if out[i].Ref == "" || len(rs) == 0 {
			continue
		}
		pr, _ := parse(out[i].Ref)
		if err := c.opts.Store.putReferrers(repositoryOf(pr), a.Digest, rs); err != nil {
			return nil, fmt.Errorf("bundle: storing the referrers of %s: %w", out[i].Ref, err)
		}
		out[i].Referrers = len(rs)
	}
	return out, nil
}

// subjectOf returns the subject of a manifest that has one: a referrer.
func subjectOf(raw []byte) (digest.Digest, bool) {
	var m struct {
		Subject *ocispec.Descriptor `json:"subject"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Subject == nil {
		return "", false
	}
	return m.Subject.Digest, true
}
