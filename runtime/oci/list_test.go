package oci

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"

	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// storeModule puts the artifact of wasm into c's store, as a pull would,
// and returns its manifest digest.
func storeModule(t *testing.T, c *Client, wasm []byte) digest.Digest {
	t.Helper()
	manifest, cfg, layer, err := build(wasm)
	if err != nil {
		t.Fatal(err)
	}
	a := &Artifact{Digest: digest.FromBytes(manifest), LayerDigest: layer.Digest, Wasm: wasm, manifest: manifest, config: cfg}
	if err := c.store(a); err != nil {
		t.Fatal(err)
	}
	return a.Digest
}

// TestStoreListRemove: List shows each artifact (annotations, module
// digest and size, most recently used first) without making anything
// look used; Remove takes a manifest, refuses a module's digest naming
// its manifest, an unknown digest and a pinned manifest; what only the
// removed manifest referenced goes at the next GC, the rest stays.
func TestStoreListRemove(t *testing.T) {
	s := newStore(t)
	c := newClient(t, Options{Store: s})
	named, err := metadata.Write(tiny, &metadata.Metadata{Name: "tiny", Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	plain := storeModule(t, c, tiny)
	annotated := storeModule(t, c, named)
	// A signature kept for the annotated one: counted with it, not listed.
	sig := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{{MediaType: "application/json", Digest: digest.FromString("{}"), Size: 2}},
		Subject: &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: annotated, Size: 1}}
	raw, _ := json.Marshal(sig)
	if err := s.Put(digest.FromBytes(raw), raw); err != nil {
		t.Fatal(err)
	}
	old, recent := time.Now().Add(-time.Hour), time.Now().Add(-time.Minute)
	os.Chtimes(s.path(plain), old, old)
	os.Chtimes(s.path(annotated), recent, recent)

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Digest != annotated || list[1].Digest != plain {
		t.Fatalf("List: %d artifacts, want %s then %s", len(list), annotated, plain)
	}
	a := list[0]
	if a.Referrers != 1 || list[1].Referrers != 0 {
		t.Errorf("referrers counted: %d and %d, want 1 and 0", a.Referrers, list[1].Referrers)
	}
	if a.Title != "tiny" || a.Version != "1.2.3" || a.Module != digest.FromBytes(named) || a.Size != int64(len(named)) || !a.Complete {
		t.Errorf("annotated artifact: title %q version %q module %s size %d complete %t", a.Title, a.Version, a.Module, a.Size, a.Complete)
	}
	if a.LastUsed.Sub(recent).Abs() > time.Second {
		t.Errorf("LastUsed %s, want %s", a.LastUsed, recent)
	}
	if list[1].Title != "" || list[1].Module != digest.FromBytes(tiny) {
		t.Errorf("plain artifact: title %q module %s", list[1].Title, list[1].Module)
	}
	if st, _ := os.Stat(s.path(plain)); !st.ModTime().Equal(list[1].LastUsed) || time.Since(st.ModTime()) < 30*time.Minute {
		t.Errorf("List touched the manifest: mtime %s", st.ModTime())
	}

	err = s.Remove(digest.FromBytes(named))
	if !errors.Is(err, ErrNotManifest) || !strings.Contains(err.Error(), annotated.String()) {
		t.Errorf("Remove of a module digest: %v; want ErrNotManifest naming %s", err, annotated)
	}
	if _, err := ParseDigest("sha256:abc"); err == nil {
		t.Error("ParseDigest took a short digest")
	}
	if d, err := ParseDigest("example.com/p/tiny@" + annotated.String()); err != nil || d != annotated {
		t.Errorf("ParseDigest of a pinned reference: %s, %v", d, err)
	}
	if err := s.Remove(digest.FromString("nothing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of an unknown digest: %v", err)
	}
	s.Pin("test", annotated)
	if err := s.Remove(annotated); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("Remove of a pinned manifest: %v", err)
	}
	s.Pin("test")
	if err := s.Remove(annotated); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 1 || list[0].Digest != plain {
		t.Fatalf("after Remove: %d artifacts", len(list))
	}
	if _, err := os.Stat(s.path(digest.FromBytes(named))); err != nil {
		t.Fatalf("Remove took the module at once: %v", err)
	}
	// Past the grace period, GC takes the module; the other artifact stays.
	for _, d := range []digest.Digest{digest.FromBytes(named), digest.FromBytes(tiny)} {
		os.Chtimes(s.path(d), old, old)
	}
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path(digest.FromBytes(named))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("GC kept the removed manifest's module: %v", err)
	}
	if a, ok := c.fromStore(mustParse(t, "example.com/p/tiny@"+plain.String()), plain); !ok || string(a.Wasm) != string(tiny) {
		t.Error("GC took the artifact that was not removed")
	}
}

func mustParse(t *testing.T, ref string) registry.Reference {
	t.Helper()
	r, err := parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
