//go:build !wasip1

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// BenchmarkBuilds measures the guest as built by default, with the
// linker's -s -w, and that build shrunk by binaryen's wasm-opt -Oz (when
// wasm-opt is installed: Debian's binaryen): module size, a cold load
// (no compilation cache: wazero compiles it), a warm load (from the
// compilation cache) and the first call after it, a Validate through the
// host alias, which also shows each build works.
//
//	go test -run '^$' -bench . -benchtime 3x ./e2e_test/
func BenchmarkBuilds(b *testing.B) {
	def := testguest.Build(b, guestDir)
	stripped := testguest.BuildWith(b, guestDir, "-s -w")
	builds := []struct{ name, path string }{{"default", def}, {"s-w", stripped}}
	if _, err := exec.LookPath("wasm-opt"); err == nil {
		builds = append(builds, struct{ name, path string }{"s-w+wasm-opt-Oz", wasmOpt(b, stripped)})
	} else {
		b.Log("wasm-opt not installed (apt-get install binaryen): its build is not measured")
	}
	sim, err := dosim.Start(dosim.Options{Token: simToken, HourlyLimit: 1 << 30, BurstLimit: 1 << 30}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	ctx := provider.WithMachineNamespace(context.Background(), namespace)
	spec := (&fixture{machines: machines{m: map[string]*clusterv1alpha1.Machine{}}}).machineWith("bench", providerSpec(cloudProviderSpec(nil), nil)).Spec
	for _, bl := range builds {
		st, err := os.Stat(bl.path)
		if err != nil {
			b.Fatal(err)
		}
		kc := kube()
		load := func(b *testing.B, cacheDir string) (*runtime.Runtime, *runtime.Provider, time.Duration) {
			opts := []runtime.Option{testhost.EngineOption(), runtime.WithKubernetesClient(kc), runtime.WithLogger(logger())}
			if cacheDir != "" {
				opts = append(opts, runtime.WithCompilationCacheDir(cacheDir))
			}
			rt, err := runtime.New(opts...)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			p, err := rt.Load(ctx, bl.path, runtime.WithPolicy(policy(sim.URL)))
			if err != nil {
				b.Fatal(err)
			}
			return rt, p, time.Since(start)
		}
		b.Run(bl.name+"/cold", func(b *testing.B) {
			var total time.Duration
			for range b.N {
				rt, _, d := load(b, "")
				total += d
				_ = rt.Close(ctx)
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "module-MiB")
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "load-ms")
		})
		b.Run(bl.name+"/warm", func(b *testing.B) {
			dir := b.TempDir()
			rt, _, _ := load(b, dir) // fills the cache
			_ = rt.Close(ctx)
			b.ResetTimer()
			var total, first, closing time.Duration
			for range b.N {
				rt, p, d := load(b, dir)
				total += d
				// The first call instantiates the module: the Go runtime's
				// and every package's init, godo's included.
				start := time.Now()
				if err := p.Validate(ctx, spec, nil); err != nil {
					b.Fatalf("Validate on the %s build: %v", bl.name, err)
				}
				first += time.Since(start)
				start = time.Now()
				_ = rt.Close(ctx)
				closing += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "load-ms")
			b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "first-call-ms")
			b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
		})
	}
}

// wasmOpt runs wasm-opt -Oz on a module, once per input (cached beside
// the built guests).
func wasmOpt(b *testing.B, in string) string {
	src, err := os.ReadFile(in)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(src)
	out := filepath.Join(testguest.CacheDir(b), "guests", "digitalocean-wasm-opt-"+hex.EncodeToString(sum[:8])+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	// Go's wasm uses these post-MVP features; wasm-opt must keep them.
	cmd := exec.Command("wasm-opt", "-Oz", "--enable-bulk-memory", "--enable-sign-ext", "--enable-nontrapping-float-to-int",
		"--enable-mutable-globals", in, "-o", out+".tmp")
	if o, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("wasm-opt: %v\n%s", err, o)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		b.Fatal(err)
	}
	return out
}
