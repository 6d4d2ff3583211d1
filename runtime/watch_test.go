package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/wasmprov/wasmprov/internal/testguest"
)

func watchedFixture(t *testing.T, opts ...RegistryOption) (*fixture, string) {
	t.Helper()
	f := newFixture(t, opts...)
	dir := t.TempDir()
	if err := f.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f, dir
}

func waitServing(t testing.TB, f *fixture, name, sha string) {
	t.Helper()
	waitFor(t, 20*time.Second, name+" serving "+sha[:12], func() bool {
		h, err := f.reg.Get(name)
		return err == nil && h.SHA256() == sha
	})
}

// TestWatchFollowsDirectory: a new file is loaded, an atomic rename and a
// copy in place are both picked up, a policy change reloads, a removal
// unloads (after the call in flight), and the name comes back with its
// handle.
func TestWatchFollowsDirectory(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f, dir := watchedFixture(t)
	path := filepath.Join(dir, "w.wasm")

	writeAtomic(t, path, v1)
	waitServing(t, f, "w", sum(v1))
	h, _ := f.reg.Get("w")

	writeInPlace(t, path, v2, 8, time.Millisecond)
	waitServing(t, f, "w", sum(v2))
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("after copy in place: %q, %v", v, err)
	}

	writeAtomic(t, path, v1)
	waitServing(t, f, "w", sum(v1))

	// A policy change alone is a new version.
	mark := f.ev.len()
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte("poolSize: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.ev.wait(t, mark, 20*time.Second, func(e Event) bool { return e.Kind == EventReloaded })
	if got := h.Current().Policy().PoolSize; got != 2 {
		t.Fatalf("pool size after policy change = %d", got)
	}

	// Removal waits for the call in flight.
	slow := make(chan error, 1)
	go func() {
		_, err := version(ctx, h, map[string]string{"spin": "15"})
		slow <- err
	}()
	cur := h.Current()
	waitFor(t, 5*time.Second, "slow call", func() bool { inUse := cur.PoolStats().InUse; return inUse == 1 })
	mark = f.ev.len()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	f.ev.wait(t, mark, 10*time.Second, func(e Event) bool { return e.Kind == EventUnloaded })
	if _, err := f.reg.Get("w"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("Get after removal = %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("call in flight during removal failed: %v", err)
	}
	f.ev.wait(t, mark, 10*time.Second, func(e Event) bool { return e.Kind == EventDrained && e.SHA256 == sum(v1) })

	// It comes back; the old handle works again.
	writeAtomic(t, path, v2)
	waitServing(t, f, "w", sum(v2))
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("old handle after the file came back: %q, %v", v, err)
	}
}

// TestWatchBurst: a file replaced 50 times within a second, in place and by
// rename, ends on the last version, loads far fewer times than it was
// written, and never stops serving.
func TestWatchBurst(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f, dir := watchedFixture(t, WithDebounce(100*time.Millisecond))
	path := filepath.Join(dir, "b.wasm")
	writeAtomic(t, path, v1)
	waitServing(t, f, "b", sum(v1))
	h, _ := f.reg.Get("b")
	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := version(ctx, h, nil); err != nil {
				failures.Add(1)
				t.Errorf("call failed: %v", err)
			}
			calls.Add(1)
		}
	}()
	mark := f.ev.len()
	start := time.Now()
	for i := range 50 {
		b := v1
		if i%2 == 1 {
			b = v2 // the last write (i == 49) is v2
		}
		if i%3 == 0 {
			writeInPlace(t, path, b, 4, 0)
		} else {
			writeAtomic(t, path, b)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * 19 * time.Millisecond)))
	}
	burst := time.Since(start)
	waitServing(t, f, "b", sum(v2))
	time.Sleep(300 * time.Millisecond) // any straggling debounce fires
	close(stop)
	wg.Wait()
	if h.SHA256() != sum(v2) {
		t.Fatalf("ended on %s, want v2", h.SHA256())
	}
	loads := f.ev.count(EventReloaded) + f.ev.count(EventRejected)
	t.Logf("50 writes in %s: %d load attempts after the first load (%d events since the burst), %d calls, %d failed",
		burst.Round(time.Millisecond), loads, f.ev.len()-mark, calls.Load(), failures.Load())
	if loads > 10 {
		t.Fatalf("%d load attempts for a burst of 50 writes: debounce is not working", loads)
	}
	if calls.Load() == 0 {
		t.Fatal("no calls made")
	}
}

// TestWatchDirectoryDisappears: removing the whole directory unloads
// nothing; when it comes back it is rescanned.
func TestWatchDirectoryDisappears(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f := newFixture(t, WithDirPollInterval(50*time.Millisecond))
	parent := t.TempDir()
	dir := filepath.Join(parent, "providers")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "d.wasm"), v1, 0o644)
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("d")
	mark := f.ev.len()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, ev := f.ev.wait(t, mark, 10*time.Second, func(e Event) bool { return e.Kind == EventWatchError })
	if !strings.Contains(ev.Err.Error(), "disappeared") {
		t.Fatalf("watch error %v", ev.Err)
	}
	time.Sleep(200 * time.Millisecond) // debounced file removals have fired
	if f.ev.count(EventUnloaded) != 0 {
		t.Fatal("a vanished directory unloaded its providers")
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("while the directory is gone: %q, %v", v, err)
	}
	if !strings.Contains(f.logs.String(), "provider directory disappeared; providers keep serving their last good version") {
		t.Fatalf("no clear log line:\n%s", f.logs.String())
	}
	// Back, with a new version: picked up by the rescan.
	tmp := filepath.Join(parent, "staging")
	os.Mkdir(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, "d.wasm"), v2, 0o644)
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	waitServing(t, f, "d", sum(v2))
	// And it is watched again.
	writeAtomic(t, filepath.Join(dir, "d.wasm"), v1)
	waitServing(t, f, "d", sum(v1))
}

// TestHotReloadUnderLoad is the acceptance load test: 16 goroutines call
// continuously while the file is replaced 100 times with alternating good
// versions and 20 corrupt ones (half by atomic rename, half copied in
// place). No call may fail, every answer must come from one complete
// version, and the last good file must be serving at the end.
func TestHotReloadUnderLoad(t *testing.T) {
	ctx := context.Background()
	good, corrupt := 100, 20
	if testing.Short() {
		good, corrupt = 10, 2
	}
	versions := map[string][]byte{"v1": guest(t, "v1", ""), "v2": guest(t, "v2", "")}
	f, dir := watchedFixture(t, WithDebounce(20*time.Millisecond))
	path := filepath.Join(dir, "load.wasm")
	// Two instances: the 16 callers queue for them (as a controller's
	// workers queue for a provider), which leaves the 2-core test machine
	// some CPU for loading the next version.
	if err := os.WriteFile(filepath.Join(dir, "load.yaml"), []byte("poolSize: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, path, versions["v1"])
	waitServing(t, f, "load", sum(versions["v1"]))
	h, _ := f.reg.Get("load")

	const callers = 16
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, failures atomic.Int64
	seen := make([]map[string]int, callers)
	var firstErr atomic.Value
	for g := range callers {
		seen[g] = map[string]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := version(ctx, h, nil)
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				seen[g][v]++
			}
		}()
	}

	start := time.Now()
	serving := "v1"
	steps := good + corrupt
	every := steps / corrupt // a corrupt file every 6th step
	var goodDone, corruptDone int
	lastGood := serving
	for i := range steps {
		inPlace := i%2 == 1
		if i%every == every-1 && corruptDone < corrupt {
			// Corrupt: garbage, a truncated module, or a module with a
			// torn tail — each unique, so none is skipped as known-bad.
			base := versions[serving]
			var bad []byte
			switch corruptDone % 3 {
			case 0:
				bad = []byte(fmt.Sprintf("not wasm at all %d", i))
			case 1:
				bad = append([]byte(nil), base[:len(base)/3+i]...)
			default:
				bad = append(append([]byte(nil), base[:len(base)-1000]...), []byte(fmt.Sprintf("torn%d", i))...)
			}
			mark := f.ev.len()
			if inPlace {
				writeInPlace(t, path, bad, 4, time.Millisecond)
			} else {
				writeAtomic(t, path, bad)
			}
			f.ev.wait(t, mark, 30*time.Second, func(e Event) bool { return e.Kind == EventRejected && e.SHA256 == sum(bad) })
			corruptDone++
			continue
		}
		next := "v2"
		if serving == "v2" {
			next = "v1"
		}
		if inPlace {
			writeInPlace(t, path, versions[next], 4, time.Millisecond)
		} else {
			writeAtomic(t, path, versions[next])
		}
		waitServing(t, f, "load", sum(versions[next]))
		serving, lastGood = next, next
		goodDone++
	}
	elapsed := time.Since(start)
	// Let the debounce settle, keep calling a little, then check the end
	// state.
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	total := map[string]int{}
	for _, m := range seen {
		for v, n := range m {
			total[v] += n
		}
	}
	t.Logf("%d good + %d corrupt replacements in %s; %d calls (%.0f/s), %d failed; answers by version %v; events: %d reloaded, %d rejected, %d drained",
		goodDone, corruptDone, elapsed.Round(time.Millisecond), calls.Load(), float64(calls.Load())/elapsed.Seconds(),
		failures.Load(), total, f.ev.count(EventReloaded), f.ev.count(EventRejected), f.ev.count(EventDrained))
	if failures.Load() != 0 {
		t.Fatalf("%d calls failed; first: %v", failures.Load(), firstErr.Load())
	}
	if goodDone != good || corruptDone != corrupt {
		t.Fatalf("ran %d good and %d corrupt replacements", goodDone, corruptDone)
	}
	for v := range total {
		if v != "v1" && v != "v2" {
			t.Fatalf("answer from unknown version %q", v)
		}
	}
	if total["v1"] == 0 || total["v2"] == 0 || calls.Load() < int64(good) {
		t.Fatalf("too few calls to mean anything: %v", total)
	}
	if got := f.ev.count(EventReloaded); got < good {
		t.Fatalf("%d reloads for %d good replacements", got, good)
	}
	if h.SHA256() != sum(versions[lastGood]) {
		t.Fatalf("serving %s, want the last good file (%s)", h.SHA256(), lastGood)
	}
	if v, err := version(ctx, h, nil); err != nil || v != lastGood {
		t.Fatalf("final answer %q, %v; want %s", v, err, lastGood)
	}
	// Every replaced version drains and closes.
	waitFor(t, 30*time.Second, "old versions closed", func() bool { return liveProviders(f.rt) == 1 })
}

// memSnapshot measures what a leak would grow.
type memSnapshot struct {
	heap      uint64 // live Go heap after GC
	providers int    // open provider versions (each a wazero runtime + compiled module)
	instances int64  // live wazero module instances
	mappings  int    // memory mappings (compiled code is mmapped)
}

func snapshot(rt *Runtime) memSnapshot {
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
	if raceEnabled {
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
		waitFor(t, 30*time.Second, "drains", func() bool { return f.reg.Status()[0].Draining == 0 })
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
			rt, err := New(WithEngine(Engine(os.Getenv(EngineEnv))), WithLogger(discardLogger()), WithCompilationCacheDir(cacheDir))
			if err != nil {
				b.Fatal(err)
			}
			ev := newEvents()
			reg := NewRegistry(rt, WithRegistryLogger(discardLogger()), WithEventHandler(ev.handle), WithDebounce(10*time.Millisecond))
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
				for {
					v, err := version(ctx, h, nil)
					if err != nil {
						b.Fatal(err)
					}
					if v == want && h.SHA256() == sum(content) {
						break
					}
					time.Sleep(200 * time.Microsecond)
				}
				_ = start
				b.StopTimer()
				_, e := ev.wait(b, mark, 10*time.Second, func(e Event) bool { return e.Kind == EventReloaded })
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

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
