package signature

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/oci"
)

// fixture is a loopback registry with two versions of a real provider
// module pushed, and a signing key.
type fixture struct {
	reg        *testregistry.Registry
	refA, refB string // tags
	dA, dB     digest.Digest
	key        *Key
	pubPEM     string
}

func newClient(t testing.TB, o oci.Options) *oci.Client {
	t.Helper()
	o.PlainHTTP = true
	o.DockerConfig = filepath.Join(t.TempDir(), "none.json")
	c, err := oci.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newFixture(t testing.TB, guest string) *fixture {
	t.Helper()
	f := &fixture{reg: testregistry.Start(t, testregistry.Options{})}
	wasm, err := os.ReadFile(testguest.Build(t, guest))
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, oci.Options{})
	ctx := context.Background()
	f.refA = f.reg.Host + "/providers/p:1.0.0"
	f.refB = f.reg.Host + "/providers/p:2.0.0"
	if f.dA, err = c.Push(ctx, wasm, f.refA); err != nil {
		t.Fatal(err)
	}
	wasmB, err := metadata.Write(wasm, &metadata.Metadata{Name: "p", Version: "2.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if f.dB, err = c.Push(ctx, wasmB, f.refB); err != nil {
		t.Fatal(err)
	}
	f.key, f.pubPEM = newKeyPEM(t)
	return f
}

func newKeyPEM(t testing.TB) (*Key, string) {
	t.Helper()
	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k, string(pub)
}

func keyPolicy(t testing.TB, pems ...string) *Policy {
	t.Helper()
	p := &Policy{}
	for _, pem := range pems {
		p.AnyOf = append(p.AnyOf, Rule{PublicKey: pem})
	}
	if err := p.Compile(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSignVerifyKey: signed with a key, a module verifies under a policy
// naming that key, through the registry, with the referrers found either
// way (API probe then tag schema, or tag schema alone); the result names
// the rule; the bundle is a v0.3 bundle over the manifest digest.
func TestSignVerifyKey(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	for _, fallback := range []bool{false, true} {
		c := newClient(t, oci.Options{NoReferrersAPI: fallback})
		ref := f.refA
		if fallback {
			ref = f.refB
		}
		signed, rd, err := Sign(ctx, c, ref, f.key)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]digest.Digest{false: f.dA, true: f.dB}[fallback]; signed != want || rd == "" {
			t.Fatalf("signed %s (referrer %s), want %s", signed, rd, want)
		}
		refs, _, err := c.Referrers(ctx, ref, BundleMediaType)
		if err != nil || len(refs) != 1 || refs[0].MediaType != BundleMediaType ||
			!strings.Contains(string(refs[0].Data), `"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"`) {
			t.Fatalf("referrers %+v, %v", refs, err)
		}
		res, err := Verify(ctx, c, ref, keyPolicy(t, f.pubPEM))
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != signed || len(res.Matched) != 1 || res.Matched[0] != "key "+shortID(f.key.ID()) || res.Bundles != 1 {
			t.Fatalf("result %+v", res)
		}
	}
}

// TestVerifyWrongKey: a module signed by another key is refused, and the
// error names the rule that failed and why.
func TestVerifyWrongKey(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	c := newClient(t, oci.Options{})
	if _, _, err := Sign(ctx, c, f.refA, f.key); err != nil {
		t.Fatal(err)
	}
	other, otherPEM := newKeyPEM(t)
	_, err := Verify(ctx, c, f.refA, keyPolicy(t, otherPEM))
	if !errors.Is(err, ErrPolicy) {
		t.Fatalf("wrong key: %v", err)
	}
	for _, want := range []string{"anyOf: 0 of 1 matched (need 1)", "key " + shortID(other.ID()), "signature invalid for this key", "names key " + shortID(f.key.ID())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestVerifyUnsigned: a module with no bundle is refused as unsigned.
func TestVerifyUnsigned(t *testing.T) {
	f := newFixture(t, "examples/fake")
	_, err := Verify(context.Background(), newClient(t, oci.Options{}), f.refA, keyPolicy(t, f.pubPEM))
	if !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), f.dA.String()) {
		t.Fatalf("unsigned: %v", err)
	}
}

// TestVerifyBundleOfAnotherDigest: a genuine bundle for module B,
// attached to module A by someone who may push, does not verify A.
func TestVerifyBundleOfAnotherDigest(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	c := newClient(t, oci.Options{})
	b, err := c.Pull(ctx, f.refB)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := f.key.SignManifest(ctx, b.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Attach(ctx, f.refA, BundleMediaType, BundleMediaType, bundle); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, c, f.refA, keyPolicy(t, f.pubPEM))
	if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "a signature of another digest, "+f.dB.String()) {
		t.Fatalf("bundle of another digest: %v", err)
	}
	// And the same bundle verifies B, where it belongs.
	if _, err := keyPolicy(t, f.pubPEM).VerifyBundles(f.dB, [][]byte{bundle}); err != nil {
		t.Fatal(err)
	}
}

// TestAnyOfAllOf: minMatches and allOf count rules, and the error lists
// every rule that failed.
func TestAnyOfAllOf(t *testing.T) {
	ctx := context.Background()
	k1, pem1 := newKeyPEM(t)
	k2, pem2 := newKeyPEM(t)
	_, pem3 := newKeyPEM(t)
	manifest := []byte(`{"schemaVersion":2}`)
	d := digest.FromBytes(manifest)
	b1, _ := k1.SignManifest(ctx, manifest)
	b2, _ := k2.SignManifest(ctx, manifest)

	p := &Policy{AnyOf: []Rule{{PublicKey: pem1}, {PublicKey: pem2}, {PublicKey: pem3}}, MinMatches: 2}
	if res, err := p.VerifyBundles(d, [][]byte{b1, b2}); err != nil || len(res.Matched) != 2 {
		t.Fatalf("2 of 3: %+v, %v", res, err)
	}
	_, err := p.VerifyBundles(d, [][]byte{b1})
	if err == nil || !strings.Contains(err.Error(), "anyOf: 1 of 3 matched (need 2)") || strings.Count(err.Error(), "signature invalid") != 2 {
		t.Fatalf("1 of 3 with minMatches 2: %v", err)
	}
	// A matching bundle among garbage and another key's still matches.
	if res, err := keyPolicy(t, pem1).VerifyBundles(d, [][]byte{[]byte("{}"), b2, b1}); err != nil || res.Bundles != 3 {
		t.Fatalf("one good bundle among three: %+v, %v", res, err)
	}
	all := &Policy{AllOf: []Rule{{PublicKey: pem1}, {PublicKey: pem2}}}
	if _, err := all.VerifyBundles(d, [][]byte{b2, b1}); err != nil {
		t.Fatal(err)
	}
	_, err = all.VerifyBundles(d, [][]byte{b2, []byte("not json")})
	if err == nil || !strings.Contains(err.Error(), "allOf: 1 of 2 matched") || !strings.Contains(err.Error(), "bundle 2: not a Sigstore bundle") {
		t.Fatalf("allOf missing one: %v", err)
	}
}

// TestPullWithHook: Pull with the policy's hook returns a signed module
// and refuses an unsigned one, leaving the store without it.
func TestPullWithHook(t *testing.T) {
	f := newFixture(t, "examples/fake")
	ctx := context.Background()
	if _, _, err := Sign(ctx, newClient(t, oci.Options{}), f.refA, f.key); err != nil {
		t.Fatal(err)
	}
	store, err := oci.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, oci.Options{Store: store, Verify: keyPolicy(t, f.pubPEM).Hook()})
	if _, err := c.Pull(ctx, f.refB); !errors.Is(err, oci.ErrUnverified) || !errors.Is(err, ErrUnsigned) {
		t.Fatalf("unsigned pull: %v", err)
	}
	if _, ok := store.Get(f.dB, 1<<20); ok {
		t.Fatal("the refused manifest is in the store")
	}
	a, err := c.Pull(ctx, f.refA)
	if err != nil || a.Digest != f.dA {
		t.Fatalf("signed pull: %v, %v", a, err)
	}
	if _, ok := store.Get(f.dA, 1<<20); !ok {
		t.Fatal("the verified manifest is not in the store")
	}
}
