package registry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/wasmprov/wasmprov/internal/testing/race"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// memSnapshot measures what a leak would grow.
type memSnapshot struct {
	heap      uint64 // live Go heap after GC
	providers int    // open provider versions (each a wazero runtime + compiled module)
	instances int64  // live wazero module instances
	mappings  int    // memory mappings (compiled code is mmapped)
}

func snapshot(rt *runtime.Runtime) memSnapshot {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	maps, _ := os.ReadFile("/proc/self/maps")
	return memSnapshot{heap: ms.HeapAlloc, providers: liveProviders(rt), instances: liveInstances(rt),
		mappings: strings.Count(string(maps), "\n")}
}

// TestReloadLeak: after 200 reloads the Go heap, the open versions, the live
// wazero instances and the process's memory mappings are back within a
// small bound of where they started. Under the race detector, 50: a leak of
// one instance or one mapping per reload still exceeds the bounds several
// times over, and each reload costs ~0.9 s there instead of ~0.12 s.
func TestReloadLeak(t *testing.T) {
	ctx := context.Background()
	n := 200
	if race.Enabled {
		n = 50
	}
	if testing.Short() {
		n = 20
	}
	vs := [][]byte{guest(t, "v1", ""), guest(t, "v2", "")}
	f := newFixture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "leak.wasm")
	os.WriteFile(path, vs[0], 0o644)
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("leak")
	reload := func(i int) {
		b := vs[i%2]
		writeAtomic(t, path, b)
		if err := f.reg.Reload(ctx, "leak"); err != nil {
			t.Fatal(err)
		}
		if _, err := version(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	settle := func() {
		f.waitFor(t, "drains", func() bool { return f.reg.Status()[0].Draining == 0 })
	}
	// Warm up: caches, pools and the allocator reach their steady state.
	for i := 1; i <= 10; i++ {
		reload(i)
	}
	settle()
	before := snapshot(f.rt)
	start := time.Now()
	for i := 1; i <= n; i++ {
		reload(i)
	}
	elapsed := time.Since(start)
	settle()
	after := snapshot(f.rt)
	t.Logf("%d reloads in %s (%s each); heap %.1f → %.1f MiB; providers %d → %d; instances %d → %d; mappings %d → %d",
		n, elapsed.Round(time.Millisecond), (elapsed / time.Duration(n)).Round(time.Millisecond),
		float64(before.heap)/(1<<20), float64(after.heap)/(1<<20), before.providers, after.providers,
		before.instances, after.instances, before.mappings, after.mappings)
	if st := f.reg.Status()[0]; st.ReloadsOK != int64(n+11) {
		t.Fatalf("%d successful loads, want %d", st.ReloadsOK, n+11)
	}
	// One instance of a Go guest holds ~8 MiB of linear memory on the Go
	// heap and a compiled module adds mappings: leaking one per reload
	// would blow these bounds many times over.
	const heapSlack = 24 << 20
	if after.heap > before.heap+heapSlack {
		t.Errorf("Go heap grew from %d to %d bytes over %d reloads", before.heap, after.heap, n)
	}
	if after.providers != 1 || before.providers != 1 {
		t.Errorf("open provider versions: %d before, %d after; want 1", before.providers, after.providers)
	}
	if after.instances > before.instances+1 {
		t.Errorf("live instances grew from %d to %d", before.instances, after.instances)
	}
	if after.mappings > before.mappings+32 {
		t.Errorf("memory mappings grew from %d to %d", before.mappings, after.mappings)
	}
}

// withCustomSection returns wasm with a custom section appended: the same
// module, but new content, so nothing compiled it before.
func withCustomSection(wasm []byte, tag string) []byte {
	name := "wasmprov-bench"
	payload := append([]byte{byte(len(name))}, name...)
	payload = append(payload, tag...)
	out := append([]byte(nil), wasm...)
	out = append(out, 0) // custom section id
	n := uint32(len(payload))
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, b|0x80)
			continue
		}
		out = append(out, b)
		break
	}
	return append(out, payload...)
}

// BenchmarkReloadLatency measures, per reload, the time from the file
// write (atomic rename) to the first call answered by the new version,
// through the fsnotify watch with a 10ms debounce.
//
//   - warm: the two versions alternate, so each is found in the on-disk
//     compilation cache;
//   - cold: every version is new content (a unique custom section), so each
//     is compiled from scratch.
//
// It also reports load-ms (the registry's read → swap, from the event) and
// compile-ms (wazero compiling the same content alone, in a fresh runtime
// with the same kind of cache), so swap overhead = ms/reload − compile-ms.
func BenchmarkReloadLatency(b *testing.B) {
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			vs := [][]byte{guest(b, "v1", ""), guest(b, "v2", "")}
			cacheDir := testguest.CompilationCacheDir(b)
			if mode == "cold" {
				cacheDir = b.TempDir()
			}
			rt := testhost.NewRuntime(b, runtime.WithCompilationCacheDir(cacheDir)) // logs nothing: a benchmark
			ev := newEvents()
			reg := registry.New(rt, registry.WithLogger(discardLogger()), registry.WithEventHandler(ev.handle), registry.WithDebounce(10*time.Millisecond))
			defer rt.Close(ctx)
			defer reg.Close(ctx)
			dir := b.TempDir()
			path := filepath.Join(dir, "bench.wasm")
			os.WriteFile(path, vs[0], 0o644)
			if err := reg.LoadDir(ctx, dir); err != nil {
				b.Fatal(err)
			}
			if err := reg.Watch(ctx); err != nil {
				b.Fatal(err)
			}
			h, _ := reg.Get("bench")
			// Warm: both versions in the cache.
			for _, v := range vs {
				p, err := rt.LoadBytes(ctx, "x", v)
				if err != nil {
					b.Fatal(err)
				}
				p.Close(ctx)
			}
			var loadTotal, compileTotal time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				content := vs[(i+1)%2]
				want := fmt.Sprintf("v%d", (i+1)%2+1)
				if mode == "cold" {
					content = withCustomSection(content, fmt.Sprintf("%d-%d", i, time.Now().UnixNano()))
				}
				mark := ev.len()
				b.StartTimer()
				start := time.Now()
				writeAtomic(b, path, content)
				// Served from the swap on, which the event follows at once.
				_, e := ev.wait(b, mark, func(e registry.Event) bool { return e.Kind == registry.EventReloaded })
				_ = start
				b.StopTimer()
				if v, err := version(ctx, h, nil); err != nil || v != want || h.SHA256() != sum(content) {
					b.Fatalf("after the reload event: %q, %v, serving %s; want %s", v, err, h.SHA256(), want)
				}
				loadTotal += e.Duration
				// Compile the same content alone, with the same cache state.
				compileTotal += compileOnly(b, ctx, content, mode)
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(loadTotal.Microseconds())/1000/float64(b.N), "load-ms")
			b.ReportMetric(float64(compileTotal.Microseconds())/1000/float64(b.N), "compile-ms")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/reload")
		})
	}
}

// compileOnly times wazero compiling wasm: from the shared on-disk test
// cache (warm: the content is there) or from nothing (cold).
func compileOnly(b *testing.B, ctx context.Context, wasm []byte, mode string) time.Duration {
	var cache wazero.CompilationCache
	var err error
	if mode == "warm" {
		cache, err = wazero.NewCompilationCacheWithDir(testguest.CompilationCacheDir(b))
		if err != nil {
			b.Fatal(err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	defer cache.Close(ctx)
	wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
	defer wr.Close(ctx)
	start := time.Now()
	if _, err := wr.CompileModule(ctx, wasm); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
