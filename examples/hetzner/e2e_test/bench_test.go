//go:build !wasip1

package e2e

import (
	"context"
	"os"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

// BenchmarkVariants compares the two builds: module size, compile time
// (no compilation cache), host heap held by a loaded provider, and the
// cost of Get (one API call) and MachineMetricsLabels (no API call).
//
//	go test -run '^$' -bench . -benchtime 200x ./examples/hetzner/e2e_test/
func BenchmarkVariants(b *testing.B) {
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			path := testguest.Build(b, v.dir)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.Run("compile", func(b *testing.B) {
				var total time.Duration
				var heap uint64
				for i := 0; i < b.N; i++ {
					rt, err := runtime.New(testhost.EngineOption())
					if err != nil {
						b.Fatal(err)
					}
					var before, after goruntime.MemStats
					goruntime.GC()
					goruntime.ReadMemStats(&before)
					start := time.Now()
					p, err := rt.Load(ctx, path, runtime.WithPolicy(policy()))
					if err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					goruntime.GC()
					goruntime.ReadMemStats(&after)
					heap += after.HeapInuse - min(after.HeapInuse, before.HeapInuse)
					_ = p.Close(ctx)
					_ = rt.Close(ctx)
				}
				b.ReportMetric(float64(st.Size())/(1<<20), "module-MiB")
				b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "load-ms")
				b.ReportMetric(float64(heap)/float64(b.N)/(1<<20), "heap-MiB")
			})
			e := getEnv(b, v.dir)
			sim, err := hcloudsim.Start(hcloudsim.Options{RateLimit: 1 << 30}, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer sim.Close()
			f := &fixture{env: e, sim: sim, ctx: ctx}
			m := f.machineB(b, "bench")
			if _, err := f.p.Create(ctx, m, e.cluster.Data(), ""); err != nil {
				b.Fatal(err)
			}
			b.Run("Get", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := f.p.Get(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("MachineMetricsLabels", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := f.p.MachineMetricsLabels(ctx, m, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
