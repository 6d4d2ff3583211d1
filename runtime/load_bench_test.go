package runtime_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"

	"sigs.k8s.io/yaml"
)

// BenchmarkLoadWarmCache is a new process's start with a warm compilation
// cache, less the process itself: a new Runtime on a cache directory an
// earlier Runtime filled, Load of a Go guest, its first call
// (MachineMetricsLabels) returned, everything closed. It runs on every
// engine compiled in. Reproduce (issue 19, docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench LoadWarmCache -benchtime 10x -count 3 ./runtime/
//	CGO_ENABLED=1 go test -tags wasmtime -run '^$' -bench LoadWarmCache -benchtime 10x -count 3 ./runtime/
//
// The process start the CLI adds on top (`time wasmprov call ...`) is
// measured with the CLI, not here.
func BenchmarkLoadWarmCache(b *testing.B) {
	ctx := context.Background()
	hetzner := new(clusterv1alpha1.Machine)
	raw, err := os.ReadFile(filepath.Join("..", "examples", "hetzner", "testdata", "machine.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, hetzner); err != nil {
		b.Fatal(err)
	}
	machines := map[string]*clusterv1alpha1.Machine{"examples/hetzner": hetzner, "examples/fake": realisticMachine(b)}
	for _, guest := range []string{"examples/hetzner", "examples/fake"} {
		path, m := testguest.Build(b, guest), machines[guest]
		for _, eng := range runtime.Engines() {
			b.Run(filepath.Base(guest)+"/"+string(eng), func(b *testing.B) {
				dir := b.TempDir()
				start := func() {
					rt, err := runtime.New(runtime.WithEngine(eng), runtime.WithCompilationCacheDir(dir),
						runtime.WithLogger(slog.New(slog.DiscardHandler)))
					if err != nil {
						b.Fatal(err)
					}
					defer rt.Close(ctx)
					p, err := rt.Load(ctx, path)
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close(ctx)
					if _, err := p.MachineMetricsLabels(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
				start() // fills the cache
				b.ResetTimer()
				for range b.N {
					start()
				}
			})
		}
	}
}
