package runtime_test

import (
	"context"
	"os"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// BenchmarkInspect: Inspect of a Go guest in its three ways, in one run:
// static (precheck and a decode of the bytes, no cache), static-warm (a
// cache entry from an earlier run: precheck skipped, the ABI version and
// capabilities read from it) and run (compile through the warm compilation
// cache, instantiate, _initialize, the two exports). Reproduce:
//
//	go test -run '^$' -bench 'Inspect' -benchtime 5x -count 3 ./runtime/
//
// The Hetzner guest is the one of issue 19 (11.5 MB, 6,470 functions);
// its first run in a new test cache compiles it cold (seconds).
func BenchmarkInspect(b *testing.B) {
	for _, guest := range []string{"examples/fake", "examples/hetzner"} {
		wasm, err := os.ReadFile(testguest.Build(b, guest))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		dir := b.TempDir()
		// The compile of the run cases is warm: the shared test cache.
		shared := newRuntime(b)
		if _, err := shared.Inspect(ctx, wasm); err != nil {
			b.Fatal(err)
		}
		// The warm static case's cache holds the entry of a run.
		warm := newRuntime(b, runtime.WithCompilationCacheDir(dir))
		if info, err := warm.Inspect(ctx, wasm); err != nil || !info.ABIVersionKnown {
			b.Fatalf("the run that fills the cache: %+v, %v", info, err)
		}
		cold := newRuntime(b, runtime.WithCompilationCacheDir(""))
		name := guest[len("examples/"):]
		for _, bc := range []struct {
			name  string
			rt    *runtime.Runtime
			opts  []runtime.InspectOption
			known bool
		}{
			{"static", cold, []runtime.InspectOption{static}, false},
			{"static-warm", warm, []runtime.InspectOption{static}, true},
			{"run", shared, nil, true},
		} {
			b.Run(name+"/"+bc.name, func(b *testing.B) {
				b.SetBytes(int64(len(wasm)))
				b.ReportAllocs()
				for b.Loop() {
					info, err := bc.rt.Inspect(ctx, wasm, bc.opts...)
					if err != nil {
						b.Fatal(err)
					}
					if info.ABIVersionKnown != bc.known {
						b.Fatalf("ABI version known %v, want %v", info.ABIVersionKnown, bc.known)
					}
				}
			})
		}
	}
}
