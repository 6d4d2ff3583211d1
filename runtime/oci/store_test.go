package oci

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// TestStoreDamagedBlobRepulled: a damaged module in the store is a miss:
// the pull by digest goes to the registry and repairs the store.
func TestStoreDamagedBlobRepulled(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	s := newStore(t)
	c := newClient(t, Options{PlainHTTP: true, Store: s})
	d, err := c.Push(ctx, tiny, reg.Host+"/p/tiny:v1")
	if err != nil {
		t.Fatal(err)
	}
	layer := s.path(digest.FromBytes(tiny))
	if err := os.WriteFile(layer, []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := reg.Requests()
	a, err := c.Pull(ctx, reg.Host+"/p/tiny@"+d.String())
	if err != nil || !bytes.Equal(a.Wasm, tiny) {
		t.Fatalf("pull after damage: %v", err)
	}
	if reg.Requests() == before {
		t.Fatal("the damaged blob was served from the store")
	}
	if b, _ := os.ReadFile(layer); !bytes.Equal(b, tiny) {
		t.Fatal("the store was not repaired")
	}
	// Concurrent pulls sharing the store (as processes would) all succeed
	// and leave no temporary file.
	os.Remove(layer)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := newClient(t, Options{PlainHTTP: true, Store: s})
			a, err := other.Pull(ctx, reg.Host+"/p/tiny@"+d.String())
			if err == nil && !bytes.Equal(a.Wasm, tiny) {
				err = os.ErrInvalid
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range storeBlobs(t, s) {
		if strings.Contains(name, ".tmp") {
			t.Fatalf("temporary file left: %s", name)
		}
	}
}

// TestStoreGC: unreferenced blobs older than the grace period go; over
// the size cap, the least recently used artifact goes, the newest stays.
func TestStoreGC(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	put := func(wasm []byte) *Artifact {
		manifest, cfg, layer, err := build(wasm)
		if err != nil {
			t.Fatal(err)
		}
		a := &Artifact{Digest: digest.FromBytes(manifest), LayerDigest: layer.Digest, Wasm: wasm, manifest: manifest, config: cfg}
		if err := (&Client{opts: Options{Store: s}}).store(a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	age := func(d digest.Digest, by time.Duration) {
		old := time.Now().Add(-by)
		os.Chtimes(s.path(d), old, old)
	}
	a := put(tiny)
	stray := []byte("left by an interrupted pull")
	s.Put(digest.FromBytes(stray), stray)
	young := []byte("being pulled right now")
	s.Put(digest.FromBytes(young), young)
	age(digest.FromBytes(stray), time.Hour)
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(digest.FromBytes(stray), 1<<20); ok {
		t.Fatal("an old unreferenced blob survived GC")
	}
	if _, ok := s.Get(digest.FromBytes(young), 1<<20); !ok {
		t.Fatal("a young unreferenced blob was collected")
	}
	if _, ok := s.Get(a.LayerDigest, 1<<20); !ok {
		t.Fatal("a referenced module was collected")
	}

	// A cap that holds one artifact: the older one goes when a second
	// comes.
	bigA, _ := metadata.Write(tiny, &metadata.Metadata{Name: "a", Description: strings.Repeat("a", 3000)})
	bigB, _ := metadata.Write(tiny, &metadata.Metadata{Name: "b", Description: strings.Repeat("b", 3000)})
	s, _ = OpenStore(filepath.Join(dir, "capped"), 5000)
	first := put(bigA)
	for _, d := range []digest.Digest{first.Digest, first.LayerDigest} {
		age(d, time.Hour)
	}
	second := put(bigB)
	if _, ok := s.Get(first.Digest, 1<<20); ok {
		t.Fatal("over the cap, the least recently used manifest stayed")
	}
	if _, ok := s.Get(first.LayerDigest, 1<<20); ok {
		t.Fatal("over the cap, the dropped artifact's module stayed")
	}
	if _, ok := s.Get(second.LayerDigest, 1<<20); !ok {
		t.Fatal("the newest artifact was trimmed")
	}
}

// TestSaveLoad: an air gap. Save pulls from the registry into a bundle;
// a client with an empty store loads it and pulls by digest with the
// registry gone; a tampered bundle is refused whole.
func TestSaveLoad(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	c := newClient(t, Options{PlainHTTP: true})
	other, _ := metadata.Write(tiny, &metadata.Metadata{Name: "other"})
	d1, err := c.Push(ctx, tiny, reg.Host+"/p/tiny:v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(ctx, other, reg.Host+"/p/other:v2"); err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	if _, err := c.Save(ctx, []string{reg.Host + "/p/tiny:v1", reg.Host + "/p/other:v2"}, &bundle); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()

	s := newStore(t)
	offline := newClient(t, Options{PlainHTTP: true, Store: s})
	loaded, err := offline.Load(bytes.NewReader(bundle.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 || loaded[0].Name != reg.Host+"/p/tiny:v1" || loaded[0].Digest != d1 || loaded[0].Ref != reg.Host+"/p/tiny@"+d1.String() {
		t.Fatalf("loaded %+v", loaded)
	}
	a, err := offline.Pull(ctx, loaded[0].Ref)
	if err != nil || !bytes.Equal(a.Wasm, tiny) {
		t.Fatalf("offline pull: %v", err)
	}

	// One byte of the module changed: the whole bundle is refused.
	raw := bundle.Bytes()
	i := bytes.Index(raw, tiny)
	tampered := append([]byte{}, raw...)
	tampered[i+len(tiny)-1] ^= 1
	s2 := newStore(t)
	if _, err := newClient(t, Options{Store: s2}).Load(bytes.NewReader(tampered)); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("tampered bundle: %v", err)
	}
	if left := storeBlobs(t, s2); len(left) != 0 {
		t.Fatalf("a refused bundle left %v", left)
	}
}

// TestStorePin: over a tiny size cap GC drops every manifest it may, the
// least recently used first, but never a pinned one nor its blobs; a pin
// replaced or removed protects nothing any more.
func TestStorePin(t *testing.T) {
	s, err := OpenStore(t.TempDir(), 1) // any artifact is over the cap
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) *Artifact {
		wasm, err := metadata.Write(tiny, &metadata.Metadata{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		manifest, cfg, layer, err := build(wasm)
		if err != nil {
			t.Fatal(err)
		}
		a := &Artifact{Digest: digest.FromBytes(manifest), LayerDigest: layer.Digest, Wasm: wasm, manifest: manifest, config: cfg}
		for _, b := range []struct {
			d digest.Digest
			b []byte
		}{{a.LayerDigest, wasm}, {digest.FromBytes(cfg), cfg}, {a.Digest, manifest}} {
			if err := s.Put(b.d, b.b); err != nil {
				t.Fatal(err)
			}
			// Old enough for GC to collect, and the pinned one the least
			// recently used: without its pin it would go first.
			old := time.Now().Add(-2 * time.Hour)
			os.Chtimes(s.path(b.d), old, old)
		}
		return a
	}
	has := func(a *Artifact) (manifest, layer bool) {
		_, manifest = s.Get(a.Digest, 1<<20)
		_, layer = s.Get(a.LayerDigest, 1<<20)
		return manifest, layer
	}
	pinned, other := put("pinned"), put("other")
	// put aged every blob alike; make the pinned one the oldest used.
	older := time.Now().Add(-3 * time.Hour)
	os.Chtimes(s.path(pinned.Digest), older, older)
	s.Pin("registry/a", pinned.Digest)
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if m, l := has(pinned); !m || !l {
		t.Fatalf("pinned artifact after GC: manifest %t, module %t", m, l)
	}
	if m, l := has(other); m || l {
		t.Fatalf("unpinned artifact after GC over the cap: manifest %t, module %t", m, l)
	}

	// Another owner's pin of the same manifest outlives the first's
	// removal; once no owner pins it, it goes too.
	s.Pin("registry/b", pinned.Digest)
	s.Pin("registry/a")
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if m, l := has(pinned); !m || !l {
		t.Fatalf("pinned by another owner: manifest %t, module %t", m, l)
	}
	// Replacing b's set with a digest the store lacks unpins it.
	s.Pin("registry/b", other.Digest)
	for _, d := range []digest.Digest{pinned.Digest, pinned.LayerDigest} {
		os.Chtimes(s.path(d), older, older) // Get above made them recent
	}
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if m, l := has(pinned); m || l {
		t.Fatalf("unpinned artifact after GC: manifest %t, module %t", m, l)
	}
}

// TestStoreGCKeepsUseTimes: collecting reads every manifest, and must
// not make them all look used now: the next collection over the cap
// would then drop an artifact just served instead of the one unused
// for long.
func TestStoreGCKeepsUseTimes(t *testing.T) {
	s := newStore(t)
	manifest, cfg, layer, err := build(tiny)
	if err != nil {
		t.Fatal(err)
	}
	a := &Artifact{Digest: digest.FromBytes(manifest), LayerDigest: layer.Digest, Wasm: tiny, manifest: manifest, config: cfg}
	if err := (&Client{opts: Options{Store: s}}).store(a); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(s.path(a.Digest), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(s.path(a.Digest))
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(old) {
		t.Fatalf("GC moved the manifest's use time from %s to %s", old, st.ModTime())
	}
}
