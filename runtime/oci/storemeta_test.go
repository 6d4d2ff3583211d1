package oci

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

const testArtifactType = "application/vnd.example.signature+json"

// ageStore makes everything in the store look written long ago, past
// the GC's grace for young files.
func ageStore(t *testing.T, s *Store) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	_ = filepath.Walk(s.Dir(), func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			_ = os.Chtimes(p, old, old)
		}
		return nil
	})
}

// TestStoredReferrers: referrers the registry listed are kept with their
// subject, for their repository only; with the registry gone they are
// still listed, checked against
// their digests; a damaged one is named, not returned; GC keeps them as
// long as the subject and drops them with it.
func TestStoredReferrers(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	s := newStore(t)
	c := newClient(t, Options{PlainHTTP: true, Store: s})
	ref := reg.Host + "/p/tiny:v1"
	d, err := c.Push(ctx, tiny, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Attach(ctx, ref, testArtifactType, testArtifactType, []byte(`{"sig":1}`)); err != nil {
		t.Fatal(err)
	}
	if refs, _, err := c.Referrers(ctx, ref, testArtifactType); err != nil || len(refs) != 1 {
		t.Fatalf("online referrers: %v, %v", refs, err)
	}
	// The same manifest in another repository, unsigned there.
	if _, err := c.Push(ctx, tiny, reg.Host+"/q/tiny:v1"); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()
	pinnedRef := reg.Host + "/p/tiny@" + d.String()
	if got, err := c.StoredReferrers(reg.Host+"/q/tiny@"+d.String(), ""); err != nil || len(got) != 0 {
		t.Fatalf("referrers of one repository offered for another: %+v, %v", got, err)
	}

	got, err := c.StoredReferrers(pinnedRef, testArtifactType)
	if err != nil || len(got) != 1 || string(got[0].Data) != `{"sig":1}` || got[0].ArtifactType != testArtifactType {
		t.Fatalf("stored referrers: %+v, %v", got, err)
	}
	if other, err := c.StoredReferrers(pinnedRef, "application/other"); err != nil || len(other) != 0 {
		t.Fatalf("stored referrers of another type: %+v, %v", other, err)
	}

	ageStore(t, s)
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.StoredReferrers(pinnedRef, ""); err != nil || len(got) != 1 {
		t.Fatalf("GC dropped the referrers of a stored artifact: %+v, %v", got, err)
	}

	// One byte of the signature blob changed on disk.
	blob := s.path(digest.FromBytes(got[0].Data))
	if err := os.WriteFile(blob, []byte(`{"sig":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = c.StoredReferrers(pinnedRef, "")
	if len(got) != 0 || !errors.Is(err, ErrDamaged) {
		t.Fatalf("a damaged referrer: %+v, %v", got, err)
	}

	// The subject goes (over a cap of one byte): its referrers go too.
	s.maxBytes = 1
	ageStore(t, s)
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if left := storeBlobs(t, s); len(left) != 0 {
		t.Fatalf("blobs left after the subject went: %v", left)
	}
	if _, err := os.Stat(s.referrerIndexPath(reg.Host+"/p/tiny", d)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the referrer index outlived its subject: %v", err)
	}
}

// TestLastResolved: a tag pulled (or resolved) with a store is
// remembered with its digest, and forgotten when the store no longer
// holds that manifest; a reference by digest is never remembered.
func TestLastResolved(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	s := newStore(t)
	c := newClient(t, Options{PlainHTTP: true, Store: s})
	ref := reg.Host + "/p/tiny:v1"
	if _, ok := c.LastResolved(ref); ok {
		t.Fatal("a tag never resolved is remembered")
	}
	v2, _ := metadata.Write(tiny, &metadata.Metadata{Name: "v2"})
	d1, err := newClient(t, Options{PlainHTTP: true}).Push(ctx, tiny, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(ctx, ref); err != nil {
		t.Fatal(err)
	}
	res, ok := c.LastResolved(ref)
	if !ok || res.Digest != d1 || res.Ref != ref || res.At.IsZero() {
		t.Fatalf("after a pull: %+v, %v", res, ok)
	}
	// The tag moves; Resolve alone (the poll) records the move, but the
	// store does not hold the new manifest yet: nothing to fall back to.
	d2, err := newClient(t, Options{PlainHTTP: true}).Push(ctx, v2, ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Resolve(ctx, ref); err != nil || d != d2 {
		t.Fatalf("resolve: %s, %v", d, err)
	}
	if res, ok := c.LastResolved(ref); ok {
		t.Fatalf("a resolution the store cannot serve is offered: %+v", res)
	}
	if _, err := c.Pull(ctx, ref); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()
	if res, ok := c.LastResolved(ref); !ok || res.Digest != d2 {
		t.Fatalf("after the move: %+v, %v", res, ok)
	}
	// Another client on the same directory, as after a restart.
	s2, err := OpenStore(s.Dir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := newClient(t, Options{Store: s2}).LastResolved(ref); !ok || res.Digest != d2 {
		t.Fatalf("after a restart: %+v, %v", res, ok)
	}
	if _, ok := newClient(t, Options{Store: s2}).LastResolved(reg.Host + "/p/tiny@" + d2.String()); ok {
		t.Fatal("a digest reference is remembered as a tag")
	}
}

// TestSaveLoadReferrers: save carries an artifact's referrers (the
// registry's, or the store's when the registry is gone) and load puts
// them in the store, where they are listed with no registry.
func TestSaveLoadReferrers(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	c := newClient(t, Options{PlainHTTP: true, Store: newStore(t)})
	ref := reg.Host + "/p/tiny:v1"
	d, err := c.Push(ctx, tiny, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Attach(ctx, ref, testArtifactType, testArtifactType, []byte(`{"sig":1}`)); err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	if _, err := c.Save(ctx, []string{ref}, &bundle); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()
	// Saving again with the registry gone takes the store's referrers.
	var again bytes.Buffer
	if _, err := c.Save(ctx, []string{reg.Host + "/p/tiny@" + d.String()}, &again); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"online": bundle.Bytes(), "offline": again.Bytes()} {
		offline := newClient(t, Options{Store: newStore(t)})
		loaded, err := offline.Load(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(loaded) != 1 || loaded[0].Digest != d || loaded[0].Referrers != 1 {
			t.Fatalf("%s: loaded %+v", name, loaded)
		}
		got, err := offline.StoredReferrers(reg.Host+"/p/tiny@"+d.String(), testArtifactType)
		if err != nil || len(got) != 1 || string(got[0].Data) != `{"sig":1}` {
			t.Fatalf("%s: stored referrers after load: %+v, %v", name, got, err)
		}
	}
}

// TestStoreDiskFull: a store that cannot write (a full disk) loses the
// offline case only: a verified pull still returns its artifact, the
// referrers the registry listed are still returned, and both say, in
// the log, what could not be kept; once the disk has room, the next pull
// keeps it.
func TestStoreDiskFull(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	ref := reg.Host + "/p/tiny:v1"
	push := newClient(t, Options{PlainHTTP: true})
	d, err := push.Push(ctx, tiny, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := push.Attach(ctx, ref, testArtifactType, testArtifactType, []byte(`{"sig":1}`)); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	s.writeFile = func(string, []byte) error { return syscall.ENOSPC }
	var logs bytes.Buffer
	c := newClient(t, Options{PlainHTTP: true, Store: s, Logger: logTo(&logs)})
	a, err := c.Pull(ctx, ref)
	if err != nil || a.Digest != d {
		t.Fatalf("pull with a full store: %v", err)
	}
	if refs, _, err := c.Referrers(ctx, ref, testArtifactType); err != nil || len(refs) != 1 {
		t.Fatalf("referrers with a full store: %v, %v", refs, err)
	}
	for _, want := range []string{"cannot keep the artifact in the local store", "cannot keep signatures in the local store", "no space left on device"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if left := storeBlobs(t, s); len(left) != 0 {
		t.Fatalf("a full store holds %v", left)
	}
	if _, ok := c.LastResolved(ref); ok {
		t.Fatal("a resolution the store could not keep is offered")
	}
	s.writeFile = nil
	if _, err := c.Pull(ctx, ref); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()
	if _, err := c.Pull(ctx, reg.Host+"/p/tiny@"+d.String()); err != nil {
		t.Fatalf("offline pull once the disk had room: %v", err)
	}
}

// TestStoreSharedByTwoClients: two processes' clients (two Store values
// on one directory, as two serve processes sharing --store) pulling,
// listing referrers and collecting at once leave a store both can pull
// from and verify with offline.
func TestStoreSharedByTwoClients(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	push := newClient(t, Options{PlainHTTP: true})
	var refs []string
	for i := range 4 {
		wasm, _ := metadata.Write(tiny, &metadata.Metadata{Name: "m" + string(rune('a'+i))})
		ref := reg.Host + "/p/m:" + string(rune('a'+i))
		if _, err := push.Push(ctx, wasm, ref); err != nil {
			t.Fatal(err)
		}
		if _, err := push.Attach(ctx, ref, testArtifactType, testArtifactType, []byte(ref)); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	dir := t.TempDir()
	var clients []*Client
	for range 2 {
		s, err := OpenStore(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, newClient(t, Options{PlainHTTP: true, Store: s}))
	}
	errs := make(chan error, 2*len(refs))
	for _, c := range clients {
		go func() {
			for range 3 {
				for _, ref := range refs {
					if _, err := c.Pull(ctx, ref); err != nil {
						errs <- err
						return
					}
					if _, _, err := c.Referrers(ctx, ref, testArtifactType); err != nil {
						errs <- err
						return
					}
					if _, err := c.Store().GC(); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	reg.Server.Close()
	for i, c := range clients {
		for _, ref := range refs {
			res, ok := c.LastResolved(ref)
			if !ok {
				t.Fatalf("client %d: %s not remembered", i, ref)
			}
			pinned := ref[:strings.LastIndex(ref, ":")] + "@" + res.Digest.String()
			if _, err := c.Pull(ctx, pinned); err != nil {
				t.Fatalf("client %d: offline pull: %v", i, err)
			}
			if got, err := c.StoredReferrers(pinned, testArtifactType); err != nil || len(got) != 1 || string(got[0].Data) != ref {
				t.Fatalf("client %d: stored referrers of %s: %+v, %v", i, ref, got, err)
			}
		}
	}
}
