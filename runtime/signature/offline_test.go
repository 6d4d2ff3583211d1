package signature

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

// TestVerifyOffline: verified once through the registry, a signed module
// verifies again from the local store with the registry gone, after a
// restart (another client on the same directory) and across an air gap
// (save, load into an empty store). The stored bundles are verified in
// full each time: a policy naming another key refuses them, and a bundle
// damaged on disk is named in the refusal.
func TestVerifyOffline(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	if _, _, err := Sign(ctx, newClient(t, oci.Options{}), f.refA, f.key); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := oci.OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, oci.Options{Store: store})
	pinned := f.reg.Host + "/providers/p@" + f.dA.String()
	if _, err := c.Pull(ctx, pinned); err != nil {
		t.Fatal(err)
	}
	p := keyPolicy(t, f.pubPEM)
	res, err := Verify(ctx, c, pinned, p)
	if err != nil || res.Source != SourceRegistry || res.FirstVerified.IsZero() {
		t.Fatalf("online: %+v, %v", res, err)
	}
	first := res.FirstVerified
	var bundle, unsigned bytes.Buffer
	if _, err := c.Save(ctx, []string{pinned}, &bundle); err != nil {
		t.Fatal(err)
	}
	pinnedB := f.reg.Host + "/providers/p@" + f.dB.String()
	if _, err := c.Save(ctx, []string{pinnedB}, &unsigned); err != nil {
		t.Fatal(err)
	}
	f.reg.Server.Close()

	// A bundle without signatures, for a policy that wants one: refused
	// as unsigned, and the unreachable registry said too.
	bare := newClient(t, oci.Options{Store: mustStore(t)})
	if loaded, err := bare.Load(bytes.NewReader(unsigned.Bytes())); err != nil || len(loaded) != 1 || loaded[0].Referrers != 0 {
		t.Fatalf("load of an unsigned bundle: %+v, %v", loaded, err)
	}
	if _, err := Verify(ctx, bare, pinnedB, keyPolicy(t, f.pubPEM)); err == nil || !strings.Contains(err.Error(), "connection refused") ||
		!strings.Contains(err.Error(), "the local store holds no signature of it") {
		t.Fatalf("an unsigned artifact offline: %v", err)
	}

	restarted, err := oci.OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c = newClient(t, oci.Options{Store: restarted})
	res, err = Verify(ctx, c, pinned, keyPolicy(t, f.pubPEM))
	if err != nil || res.Source != SourceStore || !res.FirstVerified.Equal(first) || res.Digest != f.dA {
		t.Fatalf("offline after a restart: %+v, %v", res, err)
	}

	// Another key: the stored bundle does not do, and the registry is
	// gone; both are said.
	_, otherPEM := newKeyPEM(t)
	_, err = Verify(ctx, c, pinned, keyPolicy(t, otherPEM))
	if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "(and offline: ") {
		t.Fatalf("offline with another key: %v", err)
	}

	// The air gap: an empty store, the bundle loaded, no registry.
	gap := newClient(t, oci.Options{Store: mustStore(t)})
	loaded, err := gap.Load(bytes.NewReader(bundle.Bytes()))
	if err != nil || len(loaded) != 1 || loaded[0].Referrers != 1 {
		t.Fatalf("load: %+v, %v", loaded, err)
	}
	if res, err := Verify(ctx, gap, pinned, keyPolicy(t, f.pubPEM)); err != nil || res.Source != SourceStore {
		t.Fatalf("air-gapped: %+v, %v", res, err)
	}

	// The stored bundle damaged on disk: refused, and the damage named.
	refs, err := c.StoredReferrers(pinned, BundleMediaType)
	if err != nil || len(refs) != 1 {
		t.Fatalf("stored bundles: %+v, %v", refs, err)
	}
	blob := filepath.Join(dir, "blobs", "sha256", digest.FromBytes(refs[0].Data).Encoded())
	tampered := bytes.Replace(refs[0].Data, []byte(`"`), []byte(`'`), 1)
	if err := os.WriteFile(blob, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, c, pinned, keyPolicy(t, f.pubPEM))
	if !errors.Is(err, oci.ErrDamaged) || !strings.Contains(err.Error(), "damaged in the local store") {
		t.Fatalf("a damaged stored bundle: %v", err)
	}
}

// TestPolicyID: the identity of a policy is what it accepts: the same
// key from a file or inline is one identity, another key or a threshold
// is another.
func TestPolicyID(t *testing.T) {
	_, pem1 := newKeyPEM(t)
	_, pem2 := newKeyPEM(t)
	file := filepath.Join(t.TempDir(), "k.pub")
	if err := os.WriteFile(file, []byte(pem1), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ParsePolicy([]byte("anyOf: [{publicKeyFile: "+file+"}]"), "")
	if err != nil {
		t.Fatal(err)
	}
	inline := keyPolicy(t, pem1)
	if fromFile.ID() != inline.ID() || inline.ID() == "" {
		t.Fatalf("one key, two identities: %s, %s", fromFile.ID(), inline.ID())
	}
	two := keyPolicy(t, pem1, pem2)
	need2 := &Policy{AnyOf: two.AnyOf, MinMatches: 2}
	if err := need2.Compile(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Policy{keyPolicy(t, pem2), two, need2} {
		if p.ID() == inline.ID() {
			t.Errorf("policy %+v has the identity of another", p)
		}
	}
	if two.ID() == need2.ID() {
		t.Error("minMatches does not change the identity")
	}
}

func mustStore(t *testing.T) *oci.Store {
	t.Helper()
	s, err := oci.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerifyOfflineRootRotated: a keyless signature verified online is
// not trusted offline once the trusted root is rotated to exclude its
// CA: the rotated policy is another identity (its verification record is
// not found), and the stored bundle, verified again, is refused.
func TestVerifyOfflineRootRotated(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	c := newClient(t, oci.Options{Store: mustStore(t)})
	pinned := f.reg.Host + "/providers/p@" + f.dA.String()
	a, err := c.Pull(ctx, pinned)
	if err != nil {
		t.Fatal(err)
	}
	old := newPKI(t)
	b := old.keylessBundle(t, a.Manifest(), subject, issuer, time.Now().Add(-time.Minute), true)
	if _, err := c.Attach(ctx, pinned, BundleMediaType, BundleMediaType, b); err != nil {
		t.Fatal(err)
	}
	rule := "anyOf:\n- keyless: {issuer: " + issuer + ", subject: " + subject + "}"
	before := old.policy(t, rule)
	if res, err := Verify(ctx, c, pinned, before); err != nil || res.Source != SourceRegistry {
		t.Fatalf("online: %+v, %v", res, err)
	}
	f.reg.Server.Close()
	if res, err := Verify(ctx, c, pinned, old.policy(t, rule)); err != nil || res.Source != SourceStore {
		t.Fatalf("offline, same root: %+v, %v", res, err)
	}
	rotated := newPKI(t).policy(t, rule)
	if rotated.ID() == before.ID() {
		t.Fatal("a rotated root keeps the policy's identity")
	}
	_, err = Verify(ctx, c, pinned, rotated)
	// The new root has neither the old CA nor the old timestamp authority;
	// sigstore-go names the first that fails.
	if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "(and offline: ") {
		t.Fatalf("offline, rotated root: %v", err)
	}
}
