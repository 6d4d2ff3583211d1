package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/race"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// TestRegistryDrainsOldVersion: a call running when the swap happens
// finishes on the old version; the old version is then closed.
func TestRegistryDrainsOldVersion(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f := newFixture(t)
	if err := f.reg.Register(ctx, "p", v1, nil); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("p")
	old := h.Current()
	type result struct {
		v   string
		err error
	}
	slow := make(chan result, 1)
	go func() {
		v, err := version(ctx, h, map[string]string{"spin": "15"})
		slow <- result{v, err}
	}()
	f.waitFor(t, "slow call in flight", func() bool { inUse := old.PoolStats().InUse; return inUse == 1 })
	if err := f.reg.Register(ctx, "p", v2, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("new call: %q, %v; want v2", v, err)
	}
	select {
	case r := <-slow:
		t.Logf("slow call finished before the drain could be observed (%v)", r)
		slow <- r // read again below
	default:
		if st := f.reg.Status()[0]; st.Draining != 1 {
			t.Fatalf("old version should be draining: %+v", st)
		}
	}
	r := <-slow
	if r.err != nil || r.v != "v1" {
		t.Fatalf("call running across the swap: %q, %v; want v1", r.v, r.err)
	}
	_, ev := f.ev.wait(t, 0, func(e registry.Event) bool { return e.Kind == registry.EventDrained })
	if ev.SHA256 != sum(v1) || ev.Err != nil {
		t.Fatalf("drained event %+v", ev)
	}
	if err := old.Validate(ctx, clusterv1alpha1.MachineSpec{}, nil); !errors.Is(err, runtime.ErrProviderClosed) {
		t.Fatalf("old version still open: %v", err)
	}
	if n := liveProviders(f.rt); n != 1 {
		t.Fatalf("%d providers open, want 1", n)
	}
}

// TestHotReloadUnderLoad is the acceptance load test: 16 goroutines call
// continuously while the file is replaced 100 times with alternating good
// versions and 20 corrupt ones (half by atomic rename, half copied in
// place). No call may fail, every answer must come from one complete
// version, and the last good file must be serving at the end.
//
// Under the race detector, 30 and 6: every kind of replacement (atomic,
// in place, each of the three corruptions) still comes several times with
// the callers running, and the swap's data races are the race run's
// subject; the full count takes 130 s there, of a package's 280. The
// count of the acceptance runs without it (make test-wasmtime runs this
// package on wasmtime without the race detector).
func TestHotReloadUnderLoad(t *testing.T) {
	ctx := context.Background()
	good, corrupt := 100, 20
	if race.Enabled {
		good, corrupt = 30, 6
	}
	if testing.Short() {
		good, corrupt = 10, 2
	}
	versions := map[string][]byte{"v1": guest(t, "v1", ""), "v2": guest(t, "v2", "")}
	f, dir := watchedFixture(t, registry.WithDebounce(20*time.Millisecond))
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
				f.ev.woken.ping()
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
				writeInPlace(t, path, bad, 4)
			} else {
				writeAtomic(t, path, bad)
			}
			f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventRejected && e.SHA256 == sum(bad) })
			corruptDone++
			continue
		}
		next := "v2"
		if serving == "v2" {
			next = "v1"
		}
		if inPlace {
			writeInPlace(t, path, versions[next], 4)
		} else {
			writeAtomic(t, path, versions[next])
		}
		waitServing(t, f, "load", sum(versions[next]))
		serving, lastGood = next, next
		goodDone++
	}
	elapsed := time.Since(start)
	// Keep calling a little, then check the end state. (No debounce fires
	// without a step of the fake clock.)
	after := calls.Load() + 2*callers
	f.waitFor(t, "calls after the last replacement", func() bool { return calls.Load() >= after })
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
		failures.Load(), total, f.ev.count(registry.EventReloaded), f.ev.count(registry.EventRejected), f.ev.count(registry.EventDrained))
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
	if got := f.ev.count(registry.EventReloaded); got < good {
		t.Fatalf("%d reloads for %d good replacements", got, good)
	}
	if h.SHA256() != sum(versions[lastGood]) {
		t.Fatalf("serving %s, want the last good file (%s)", h.SHA256(), lastGood)
	}
	if v, err := version(ctx, h, nil); err != nil || v != lastGood {
		t.Fatalf("final answer %q, %v; want %s", v, err, lastGood)
	}
	// Every replaced version drains and closes.
	f.waitFor(t, "old versions closed", func() bool { return liveProviders(f.rt) == 1 })
}
