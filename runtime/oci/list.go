package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// StoredArtifact is one Wasm artifact the store holds, as List reads it.
type StoredArtifact struct {
	// Digest is the manifest's digest: what a reference pins
	// (REPOSITORY@Digest) and what Remove takes.
	Digest digest.Digest
	// Title and Version are the manifest's org.opencontainers.image.title
	// and .version annotations (the module's metadata name and version),
	// "" when it has none.
	Title, Version string
	// Module is the module's digest, its sha256: what inspect, annotate
	// and a policy's pins show, not the manifest digest.
	Module digest.Digest
	// Size is the module's size in bytes, as the manifest says.
	Size int64
	// LastUsed is when the store last wrote or served the manifest: GC
	// trims the least recently used first.
	LastUsed time.Time
	// Referrers is how many referrers (signatures) of it the store keeps,
	// for verifying offline.
	Referrers int
	// Complete says whether the module and config blobs are in the store
	// too; an artifact that is not complete is fetched again on a pull.
	Complete bool
}

// List returns the Wasm artifacts in the store, the most recently used
// first. It reads the files without touching their times: listing must
// not make everything look recently used to GC, as Get would.
func (s *Store) List() ([]StoredArtifact, error) {
	blobs, err := s.list()
	if err != nil {
		return nil, err
	}
	present := make(map[digest.Digest]bool, len(blobs))
	for _, b := range blobs {
		present[b.d] = true
	}
	var out []StoredArtifact
	referrers := map[digest.Digest]int{}
	for _, b := range blobs {
		m, ok := s.readManifest(b)
		if !ok {
			continue
		}
		if m.Subject != nil {
			referrers[m.Subject.Digest]++ // listed with its subject, not as an artifact
			continue
		}
		a := StoredArtifact{Digest: b.d, Module: m.Layers[0].Digest, Size: m.Layers[0].Size, LastUsed: b.used,
			Title: m.Annotations[ocispec.AnnotationTitle], Version: m.Annotations[ocispec.AnnotationVersion]}
		a.Complete = present[m.Config.Digest] && present[a.Module]
		out = append(out, a)
	}
	for i := range out {
		out[i].Referrers = referrers[out[i].Digest]
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastUsed.Equal(out[j].LastUsed) {
			return out[i].LastUsed.After(out[j].LastUsed)
		}
		return out[i].Digest < out[j].Digest
	})
	return out, nil
}

// readManifest reads blob b if it is a manifest GC would keep blobs for
// (an OCI image manifest with layers), intact, without touching its time.
func (s *Store) readManifest(b blobFile) (ocispec.Manifest, bool) {
	var m ocispec.Manifest
	if b.size > maxManifestSize {
		return m, false
	}
	raw, err := os.ReadFile(s.path(b.d))
	if err != nil || digest.FromBytes(raw) != b.d {
		return m, false
	}
	if json.Unmarshal(raw, &m) != nil || m.MediaType != ocispec.MediaTypeImageManifest || len(m.Layers) == 0 {
		return m, false
	}
	return m, true
}

// ErrNotManifest: Remove was given the digest of a blob the store holds
// that is not a manifest, most often a module's sha256.
var ErrNotManifest = errors.New("not a manifest")

// Remove removes the manifest d from the store. The blobs only it
// referenced (its module and config) stay until the next GC, which
// removes them as unreferenced once they are past the grace period: a
// concurrent pull of the same module then finds them still there. A
// manifest pinned in this Store value (Pin) is refused; pins of other
// processes are not seen. A digest the store has no blob of is an error
// wrapping fs.ErrNotExist, one of a blob that is not a manifest wraps
// ErrNotManifest.
func (s *Store) Remove(d digest.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%q: %w", d, err)
	}
	if d.Algorithm() != digest.SHA256 {
		return fmt.Errorf("%s: %w: the store holds sha256 blobs only", d, fs.ErrNotExist)
	}
	st, err := os.Stat(s.path(d))
	if err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	if _, ok := s.readManifest(blobFile{d: d, size: st.Size()}); !ok {
		if owners, _ := s.FindModule(d); len(owners) > 0 {
			return fmt.Errorf("%s: %w: it is the module of manifest %s (remove that)", d, ErrNotManifest, owners[0].Digest)
		}
		return fmt.Errorf("%s: %w", d, ErrNotManifest)
	}
	if s.pinned()[d] {
		return fmt.Errorf("%s: pinned by this process: it serves, or may be rolled back to", d)
	}
	if err := os.Remove(s.path(d)); err != nil {
		return fmt.Errorf("%s: %w", d, err)
	}
	return nil
}

// FindModule returns the stored artifacts whose module has digest d: the
// manifest digests a module's sha256 is known under here.
func (s *Store) FindModule(d digest.Digest) ([]StoredArtifact, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	var out []StoredArtifact
	for _, a := range list {
		if a.Module == d {
			out = append(out, a)
		}
	}
	return out, nil
}

// ParseDigest returns the digest s names: a digest (sha256:…) or a
// reference pinned to one (registry/repository@sha256:…), as a user
// copies either from push's or ls's output.
func ParseDigest(s string) (digest.Digest, error) {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	d := digest.Digest(s)
	if err := d.Validate(); err != nil {
		return "", fmt.Errorf("%q is not a digest (sha256:<64 hex digits>): %w", s, err)
	}
	return d, nil
}
