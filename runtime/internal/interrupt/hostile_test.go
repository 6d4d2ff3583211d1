package interrupt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
)

// shapeCache shares the shapes' compiled code between the tests' runtimes.
var shapeCache = wazero.NewCompilationCache()

// shapeRuntime is a wazero runtime for shape m (with tail calls if it
// needs them) whose yield function calls yield.
func shapeRuntime(ctx context.Context, tb testing.TB, m shapeModule, yield func(context.Context, api.Module)) wazero.Runtime {
	tb.Helper()
	cfg := wazero.NewRuntimeConfigCompiler().WithCompilationCache(shapeCache)
	if m.tail {
		cfg = cfg.WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { r.Close(ctx) })
	_, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, _ []uint64) { yield(ctx, mod) }), nil, nil).
		Export(YieldName).Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func sortedShapes(depth, div int) ([]string, map[string]shapeModule) {
	all := shapes(depth, div)
	return slices.Sorted(maps.Keys(all)), all
}

// TestShapesSameResults: every shape computes the same, as it is and
// instrumented with FlagBudget and (in wazero, whose single memory is then
// the flag's) FlagMemory, and the instrumented modules validate in wabt.
func TestShapesSameResults(t *testing.T) {
	ctx := context.Background()
	names, all := sortedShapes(5000, 10)
	for _, name := range names {
		m := all[name]
		t.Run(name, func(t *testing.T) {
			wasm := m.bytes()
			variants := map[string][]byte{"original": wasm}
			var err error
			if variants["FlagBudget"], err = InstrumentWith(wasm, FlagBudget); err != nil {
				t.Fatal(err)
			}
			checkBudgetOutput(t, wasm, variants["FlagBudget"])
			if m.pages == 0 {
				if variants["FlagMemory"], err = InstrumentWith(wasm, FlagMemory); err != nil {
					t.Fatal(err)
				}
				checkMemoryOutput(t, wasm, variants["FlagMemory"])
			}
			var want []uint64
			for _, v := range []string{"original", "FlagBudget", "FlagMemory"} {
				b, ok := variants[v]
				if !ok {
					continue
				}
				r := shapeRuntime(ctx, t, m, func(context.Context, api.Module) {})
				mod, err := r.Instantiate(ctx, b)
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				got, err := mod.ExportedFunction("run").Call(ctx, uint64(m.rounds))
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Fatalf("%s: run(%d) = %v, the original %v", v, m.rounds, got, want)
				}
			}
			if _, err := exec.LookPath("wasm-validate"); err == nil && !m.tail {
				wabtValidate(t, variants["FlagBudget"])
			}
		})
	}
}

// wabtValidate validates a module with wasm-validate.
func wabtValidate(tb testing.TB, wasm []byte) {
	tb.Helper()
	f := tb.TempDir() + "/m.wasm"
	if err := os.WriteFile(f, wasm, 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(wabt(tb, "wasm-validate"), "--enable-tail-call", f).CombinedOutput(); err != nil {
		tb.Fatalf("wasm-validate: %v\n%s", err, out)
	}
}

// spinCounted runs a shape's spin, instrumented with FlagBudget and the
// given budget and with its instructions counted, for d, and returns the
// most instructions run between two consecutive yields and the yields.
func spinCounted(ctx context.Context, t *testing.T, m shapeModule, budget int32, d time.Duration) (most int64, yields int64) {
	t.Helper()
	wasm := m.bytes()
	out, _, err := instrument(wasm, FlagBudget, budget)
	if err != nil {
		t.Fatal(err)
	}
	f := facts(t, wasm)
	counted := countInstructions(t, out, f.imported.globals+f.definedGlobals)
	var last int64
	var deadline time.Time
	r := shapeRuntime(ctx, t, m, func(_ context.Context, mod api.Module) {
		n := int64(mod.ExportedGlobal(countGlobalName).Get())
		most = max(most, n-last)
		last = n
		yields++
		// Stop after d, but not before a second yield: on a loaded machine
		// a slow shape (pointer-chase) may not reach it within d, and the
		// count between two yields is what is asserted. A guest that
		// yields once and never again is stopped a minute later.
		if now := time.Now(); now.After(deadline) && (yields >= 2 || now.After(deadline.Add(time.Minute))) {
			panic(errStop)
		}
	})
	mod, err := r.Instantiate(ctx, counted)
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(d)
	if _, err := mod.ExportedFunction("spin").Call(ctx); !errors.Is(err, errStop) {
		t.Fatalf("spin ended with %v", err)
	}
	return most, yields
}

// TestShapesChecksBounded: on every path of every shape, the guest runs at
// most maxRegion instructions between two checks (with a budget of 1,
// every check yields, and the count between two yields is what ran between
// two checks); with the real budget, at most Budget + maxRegion between two
// yields. Counted, not timed: what it asserts does not depend on the
// machine.
func TestShapesChecksBounded(t *testing.T) {
	ctx := context.Background()
	names, all := sortedShapes(5000, 10)
	for _, name := range names {
		m := all[name]
		t.Run(name, func(t *testing.T) {
			most, yields := spinCounted(ctx, t, m, 1, 200*time.Millisecond)
			t.Logf("budget 1: at most %d instructions between two checks (%d checks)", most, yields)
			if most > maxRegion {
				t.Errorf("%d instructions between two checks, want at most %d", most, maxRegion)
			}
			most, yields = spinCounted(ctx, t, m, Budget, 300*time.Millisecond)
			t.Logf("budget %d: at most %d instructions between two yields (%d yields)", Budget, most, yields)
			if most > Budget+maxRegion {
				t.Errorf("%d instructions between two yields, want at most %d", most, Budget+maxRegion)
			}
			if yields < 2 {
				t.Errorf("%d yields", yields)
			}
		})
	}
}

// TestRealTimeShapesGCAndInterrupt: while a shape's spin runs in wazero (FlagBudget,
// the real budget), a garbage collection of the host completes within
// 100 ms, and setting the stop flag (the yield function then panics) a
// second in ends the call within 100 ms. In a child process, which the
// parent kills after a minute: a collection waiting for a guest that never
// yields stops every goroutine of the process, the test's timers included.
func TestRealTimeShapesGCAndInterrupt(t *testing.T) {
	if os.Getenv("WASMPROV_INTERRUPT_SHAPES_CHILD") == "1" {
		shapesGCChild(t)
		return
	}
	if testing.Short() {
		t.Skip("spins each shape for a second")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRealTimeShapesGCAndInterrupt$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "WASMPROV_INTERRUPT_SHAPES_CHILD=1")
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "hostile_test.go") {
			t.Log(strings.TrimSpace(l))
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the child hung (a garbage collection waiting for a guest?), killed after a minute:\n%s", out)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// gcLimit and stopLimit: the acceptance bounds.
const (
	gcLimit   = 100 * time.Millisecond
	stopLimit = 100 * time.Millisecond
)

func shapesGCChild(t *testing.T) {
	defer time.AfterFunc(55*time.Second, func() { panic("a shape hung the process") }).Stop()
	// Linear memories as the host allocates them (mmapmem: reserved,
	// committed as they grow, no huge pages), so that a page's first touch
	// costs what it costs there: a page fault. wazero's own allocator
	// copies a memory into a new Go slice as it grows, touching it then.
	ctx := experimental.WithMemoryAllocator(context.Background(), new(mmapmem.Allocator))
	names, all := sortedShapes(50000, 1)
	// A control: the same collections while a goroutine spins in Go,
	// where the scheduler preempts it at once (what a loaded machine
	// costs, whatever runs).
	{
		var stop atomic.Bool
		go func() {
			x := 1
			for !stop.Load() {
				x = x*3 + 1
			}
		}()
		var gcs []time.Duration
		for range 5 {
			time.Sleep(50 * time.Millisecond)
			s := time.Now()
			runtime.GC()
			gcs = append(gcs, time.Since(s))
		}
		stop.Store(true)
		t.Logf("%-16s GC %v", "(Go spinning)", gcs)
	}
	only := os.Getenv("WASMPROV_INTERRUPT_SHAPE") // one shape, to investigate
	for _, name := range names {
		if only != "" && name != only {
			continue
		}
		m := all[name]
		wasm, err := InstrumentWith(m.bytes(), FlagBudget)
		if err != nil {
			t.Fatal(err)
		}
		// Timing on a shared machine: a shape that misses a limit
		// is run once more, and fails if it misses again.
		for attempt := 1; ; attempt++ {
			msg := shapeGCAndStop(ctx, t, name, m, wasm)
			if msg == "" {
				break
			}
			if attempt == 2 {
				t.Error(msg)
				break
			}
			t.Logf("%s (trying again)", msg)
		}
	}
}

// shapeGCAndStop spins m (instrumented: wasm), collects five times, stops it
// a second in, and returns what missed a limit ("" if none).
func shapeGCAndStop(ctx context.Context, t *testing.T, name string, m shapeModule, wasm []byte) string {
	var yields atomic.Int64
	var stop atomic.Bool
	var acted atomic.Int64 // when the yield function saw the flag (UnixNano)
	r := shapeRuntime(ctx, t, m, func(context.Context, api.Module) {
		yields.Add(1)
		if stop.Load() {
			acted.CompareAndSwap(0, time.Now().UnixNano())
			panic(errStop)
		}
	})
	defer r.Close(ctx)
	mod, err := r.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	// The collection's own time, on this heap, with no guest running,
	// for the log.
	runtime.GC()
	idle := time.Hour
	for range 3 {
		s := time.Now()
		runtime.GC()
		idle = min(idle, time.Since(s))
	}
	start := time.Now()
	done := spin(ctx, mod, "spin")
	for yields.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var gcs []time.Duration
	stopsBefore := stopWaits()
	for range 5 {
		time.Sleep(50 * time.Millisecond)
		s := time.Now()
		runtime.GC()
		gcs = append(gcs, time.Since(s))
	}
	stopping := stopWaits().longestSince(stopsBefore)
	time.Sleep(time.Until(start.Add(time.Second)))
	select {
	case err := <-done:
		t.Fatalf("%s: the spin returned: %v", name, err)
	default:
	}
	set := time.Now()
	stop.Store(true)
	var stopped time.Duration
	select {
	case err := <-done:
		stopped = time.Since(set)
		if !errors.Is(err, errStop) {
			t.Fatalf("%s: the call ended with %v, want errStop", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the call did not stop within 10s of the flag", name)
	}
	sorted := slices.Clone(gcs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%-16s GC %v (max %v; idle %v; stopping the world > %v); stopped %v after the flag (the yield saw it after %v); %d yields/s",
		name, gcs, sorted[len(sorted)-1], idle, stopping, stopped, time.Duration(acted.Load()-set.UnixNano()),
		yields.Load()*int64(time.Second)/int64(time.Since(start)))
	// What the guest itself can hold up: the wait for the world to stop
	// (for every goroutine to reach a safe point).
	if stopping > gcLimit {
		return fmt.Sprintf("%s: a collection waited over %v for the world to stop, want within %v", name, stopping, gcLimit)
	}
	// A loaded machine can delay a collection whatever the guest does
	// (its stop-the-world waits for every goroutine, the test's own
	// included: see the Go-spinning control): the median must be within
	// the limit, every one within 5x.
	if sorted[len(sorted)/2] > gcLimit || sorted[len(sorted)-1] > 5*gcLimit {
		return fmt.Sprintf("%s: runtime.GC took %v while the guest ran, want within %v", name, gcs, gcLimit)
	}
	if stopped > stopLimit {
		return fmt.Sprintf("%s: the call stopped %v after the flag, want within %v", name, stopped, stopLimit)
	}
	return ""
}

// shapeSeeds are small versions of the shapes, for FuzzInstrument's corpus:
// forward branches, br_table, if/else, calls, a recursion with a tail.
func shapeSeeds() [][]byte {
	small := shapeModule{funcs: []wfunc{runFunc(cat(
		repeat(3, opBlock, chain(lAcc, lM, 5), localGet(lOne), brIf(0), chain(lAcc, lM, 5), opEnd),
		repeat(2, localGet(lOne), opIf, chain(lAcc, lM, 4), opElse, chain(lAcc, lM, 1), opEnd),
		opBlock, opBlock, localGet(lSel), []byte{0x0e, 2, 0, 1, 1}, opEnd, opEnd,
		localGet(lAcc), localGet(lM), call(2), localSet(lAcc),
	)), {typ: tWork, locals: []byte{0}, code: cat(localGet(0), localGet(1), opMul)}}, rounds: 2}
	rec := shapeModule{funcs: []wfunc{
		runFunc(cat(i32c(5), call(2))),
		{typ: tRec, locals: []byte{0}, code: cat(localGet(0), opIf, localGet(0), i32c(1), opSub32, call(2), opEnd, globalChain(gAcc, gM, 3))},
	}}
	return [][]byte{small.bytes(), rec.bytes()}
}

// stopWaiting is the histogram of the times collections waited for the
// world to stop.
type stopWaiting struct{ h *metrics.Float64Histogram }

func stopWaits() stopWaiting {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	metrics.Read(s)
	return stopWaiting{s[0].Value.Float64Histogram()}
}

// longestSince is the lower bound of the highest bucket that gained a count
// since before: the longest wait was at least that.
func (w stopWaiting) longestSince(before stopWaiting) time.Duration {
	var most float64
	for i, c := range w.h.Counts {
		if c > before.h.Counts[i] {
			most = max(most, w.h.Buckets[i])
		}
	}
	return time.Duration(most * float64(time.Second))
}
