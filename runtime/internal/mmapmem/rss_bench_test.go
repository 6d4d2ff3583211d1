package mmapmem_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmprov/wasmprov/internal/hostmodule/wazerohost"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
)

// rssInstances is how many ready instances each measurement holds.
const rssInstances = 20

// BenchmarkRSSPerInstance measures the resident memory one ready instance
// of a real Go guest costs, with wazero's default memory and with mmapmem's.
// The guest is examples/fake (or the directory $MMAPMEM_BENCH_GUEST names,
// e.g. examples/hetzner), run with GOGC=50 as the runtime does (not
// instrumented for interrupts: that adds code, shared by the instances, and
// one global each). Metrics, per instance, over rssInstances instances
// created and _initialize'd:
//
//   - MiB/instance: VmRSS growth, after a GC that returns freed memory to
//     the OS;
//   - before-GC-MiB/instance: the same before that GC, what the process
//     shows until the GC and the scavenger catch up;
//   - linear-MiB/instance: the guest's linear memory size, for scale.
//
// It reports, it does not assert. -benchtime=Nx averages N measurements:
//
//	go test -run '^$' -bench RSSPerInstance -benchtime=3x ./runtime/internal/mmapmem/
func BenchmarkRSSPerInstance(b *testing.B) {
	if goruntime.GOOS != "linux" {
		b.Skip("reads VmRSS from /proc/self/status")
	}
	guest := "examples/fake"
	if g := os.Getenv("MMAPMEM_BENCH_GUEST"); g != "" {
		guest = g
	}
	wasm, err := os.ReadFile(testguest.Build(b, guest))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		alloc experimental.MemoryAllocator
	}{{"default", nil}, {"mmap", mmapmem.New()}} {
		b.Run(mode.name, func(b *testing.B) {
			if mode.name == "mmap" && mmapmem.New() == nil {
				b.Skip("mmap'd memories are not supported on this OS")
			}
			ctx := context.Background()
			cache, err := wazero.NewCompilationCacheWithDir(testguest.CompilationCacheDir(b))
			if err != nil {
				b.Fatal(err)
			}
			defer cache.Close(ctx)
			wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
				WithCompilationCache(cache).
				WithMemoryLimitPages(256*16). // the runtime's default policy: 256 MiB
				WithCloseOnContextDone(false))
			defer wr.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, wr)
			if _, err := wazerohost.Instantiate(ctx, wr); err != nil {
				b.Fatal(err)
			}
			compiled, err := wr.CompileModule(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			ictx := experimental.WithMemoryAllocator(ctx, mode.alloc) // ctx as is when nil
			cfg := wazero.NewModuleConfig().WithName("").
				WithStartFunctions("_initialize").
				WithEnv("GOGC", "50")
			instantiate := func() api.Module {
				mod, err := wr.InstantiateModule(ictx, compiled, cfg)
				if err != nil {
					b.Fatal(err)
				}
				return mod
			}
			// A first instance pages in the compiled code and what wazero
			// builds once per module; that is not per instance.
			_ = instantiate().Close(ctx)

			var rssMiB, rawMiB, linearMiB float64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				before := settledRSS(b)
				b.StartTimer()
				mods := make([]api.Module, rssInstances)
				for i := range mods {
					mods[i] = instantiate()
				}
				b.StopTimer()
				raw := rss(b)
				after := settledRSS(b)
				rssMiB += float64(after-before) / (1 << 20) / rssInstances
				rawMiB += float64(raw-before) / (1 << 20) / rssInstances
				for _, mod := range mods {
					linearMiB += float64(mod.Memory().Size()) / (1 << 20) / rssInstances
					_ = mod.Close(ctx)
				}
				b.StartTimer()
			}
			b.ReportMetric(rssMiB/float64(b.N), "MiB/instance")
			b.ReportMetric(rawMiB/float64(b.N), "before-GC-MiB/instance")
			b.ReportMetric(linearMiB/float64(b.N), "linear-MiB/instance")
			b.ReportMetric(0, "ns/op") // the time is of 20 instantiations: not the point
		})
	}
}

// settledRSS is VmRSS after a GC that returns freed memory to the OS.
func settledRSS(tb testing.TB) int64 {
	goruntime.GC()
	debug.FreeOSMemory()
	return rss(tb)
}

// rss is VmRSS in bytes.
func rss(tb testing.TB) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}
