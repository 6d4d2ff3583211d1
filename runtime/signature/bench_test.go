package signature

import (
	"context"
	"os"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/oci"
)

// The Hetzner provider (~11 MB), signed with a key. What is verified is
// the manifest digest: the module's own digest is computed once, by
// Pull's check of the layer against the manifest (BenchmarkModuleDigest
// is that cost), and verification does not read the module again.

func signedHetzner(b *testing.B) (*fixture, *oci.Client, *Policy, []byte) {
	f := newFixture(b, "examples/hetzner")
	ctx := context.Background()
	c := newClient(b, oci.Options{})
	if _, _, err := Sign(ctx, c, f.refA, f.key); err != nil {
		b.Fatal(err)
	}
	refs, _, err := c.Referrers(ctx, f.refA, BundleMediaType)
	if err != nil || len(refs) != 1 {
		b.Fatal(refs, err)
	}
	return f, c, keyPolicy(b, f.pubPEM), refs[0].Data
}

// BenchmarkVerifyBundle: one bundle against a key policy, offline.
func BenchmarkVerifyBundle(b *testing.B) {
	f, _, p, bundle := signedHetzner(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.VerifyBundles(f.dA, [][]byte{bundle}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyRegistry: Verify as Pull's hook runs it: resolve, list
// the referrers (API probe, then the tag schema) and fetch the bundle
// from a loopback registry, then verify.
func BenchmarkVerifyRegistry(b *testing.B) {
	f, c, p, _ := signedHetzner(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(ctx, c, f.refA, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModuleDigest: SHA-256 of the module, what Pull computes once.
func BenchmarkModuleDigest(b *testing.B) {
	wasm, err := os.ReadFile(testguest.Build(b, "examples/hetzner"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ResetTimer()
	for b.Loop() {
		_ = digest.FromBytes(wasm)
	}
}
