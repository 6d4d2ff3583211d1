package runtime_test

import (
	"context"
	"encoding/binary"
	"errors"
	goruntime "runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
)

// A deadline is a deadline: a guest that sleeps, copies, computes in long
// straight lines or spins two at a time is stopped within a small slack
// after its deadline, and a garbage collection of the host meanwhile is not
// held up by it (red-team findings 3, 4 and 5).
const (
	slackDeadline = time.Second
	// maxReturn is when the call must have returned.
	maxReturn = slackDeadline + 100*time.Millisecond
	// maxGCPause bounds a host runtime.GC() during the guest's run.
	maxGCPause = 100 * time.Millisecond
)

var (
	i32x1 = []byte{valI32}
	i32x2 = []byte{valI32, valI32}
	i32x4 = []byte{valI32, valI32, valI32, valI32}
)

// pollOneoffForever is a guest with the clock capability whose Validate
// waits for a one-hour clock subscription.
func pollOneoffForever() []byte {
	m := providerModule(uint64(abi.CapClock), map[string][]byte{
		abi.MethodValidate.Export(): {
			opI32Const, 0, opI32Const, 0xc0, 0x00, opI32Const, 1, opI32Const, 0x80, 0x01, // in=0 out=64 n=1 nevents=128
			opCall, 0, opDrop, opI32Const, 0,
		},
	}, genImport{"wasi_snapshot_preview1", "poll_oneoff", i32x4, i32x1})
	sub := make([]byte, 48)
	binary.LittleEndian.PutUint64(sub[0:], 7)                         // userdata
	sub[8] = 0                                                        // clock
	binary.LittleEndian.PutUint32(sub[16:], 1)                        // monotonic
	binary.LittleEndian.PutUint64(sub[24:], uint64(time.Hour))        // timeout, relative
	binary.LittleEndian.PutUint64(sub[32:], uint64(time.Millisecond)) // precision
	m.extra = map[byte][]byte{11: dataSection(0, sub)}
	return m.bytes()
}

// outputLoop is a guest whose Validate calls output with 4 MiB, unrolled
// n times in a loop body, forever.
func outputLoop(n int) []byte {
	var body []byte
	for range n {
		body = append(body, opI32Const, 0, opI32Const, 0x80, 0x80, 0x80, 0x02, opCall, 0, opDrop) // output(0, 4 MiB)
	}
	m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): loopForever(body)},
		genImport{abi.ModuleName, abi.ImportOutput, i32x2, i32x1})
	m.pages = 65
	return m.bytes()
}

// straightLineLoop is a guest whose Validate loops over n unrolled
// i64.mul.
func straightLineLoop(n int) []byte {
	m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): loopForever(unrolledMuls(n))})
	m.extra = map[byte][]byte{6: mutableI64Global()}
	return m.bytes()
}

// randomLoop fills 8 MiB with random_get, forever.
func randomLoop() []byte {
	m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): loopForever([]byte{
		opI32Const, 0, opI32Const, 0x80, 0x80, 0x80, 0x04, opCall, 0, opDrop, // random_get(0, 8 MiB)
	})}, genImport{"wasi_snapshot_preview1", "random_get", i32x2, i32x1})
	m.pages = 129
	return m.bytes()
}

// stdoutLoop writes a 4 MiB iovec to stdout, forever.
func stdoutLoop() []byte {
	m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): loopForever([]byte{
		opI32Const, 1, opI32Const, 0, opI32Const, 1, opI32Const, 16, opCall, 0, opDrop, // fd_write(1, iovs=0, 1, nwritten=16)
	})}, genImport{"wasi_snapshot_preview1", "fd_write", i32x4, i32x1})
	m.pages = 66
	iov := append(le32(64), le32(4<<20)...)
	m.extra = map[byte][]byte{11: dataSection(0, iov)}
	return m.bytes()
}

func TestRealTimeDeadlineSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("each case runs a guest for a second")
	}
	ctx := context.Background()
	rt := newRuntime(t)
	for _, tc := range []struct {
		name   string
		wasm   []byte
		policy runtime.Policy
		guests int
		// gcAfter: when the host collects (default 300 ms into the call);
		// gcs: how many times, gcAfter apart (default 1).
		gcAfter time.Duration
		gcs     int
	}{
		{"poll_oneoff of one hour with the clock granted", pollOneoffForever(), runtime.Policy{}, 1, 0, 0},
		{"output of 4 MiB in a loop", outputLoop(1), runtime.Policy{}, 1, 0, 0},
		{"64 outputs of 4 MiB per loop iteration", outputLoop(64), runtime.Policy{}, 1, 0, 0},
		// The red team's 200,000 multiplications exceed the precheck's
		// limits on one function (TestStraightLineBombIsRefused); 60,000
		// (120,000 instructions, 180 KB) is as long as a function may be.
		{"60,000 unrolled i64.mul per loop iteration", straightLineLoop(60000), runtime.Policy{}, 1, 0, 0},
		{"two spinning guests at once", straightLineLoop(60000), runtime.Policy{PoolSize: 2}, 2, 0, 0},
		{"random_get of 8 MiB in a loop", randomLoop(), runtime.Policy{}, 1, 0, 0},
		{"fd_write of 4 MiB to stdout in a loop", stdoutLoop(), runtime.Policy{}, 1, 0, 0},
		// A single bulk instruction runs as one piece of compiled code
		// (wazero: memmove calls) unless the instrumentation splits it
		// (issue 25 item 6).
		{"memory.fill of 256 MiB in a loop", memoryFillLoop(256), runtime.Policy{MemoryLimitMiB: 256}, 1, 0, 0},
		{"memory.copy of 128 MiB in a loop", memoryCopyLoop(128), runtime.Policy{MemoryLimitMiB: 256}, 1, 0, 0},
		{"memory.init of 31 MiB in a loop", memoryInitLoop(31 << 20), runtime.Policy{MemoryLimitMiB: 256}, 1, 0, 0},
		// The fill runs once, at the start: the host collects during it.
		{"memory.grow to 256 MiB then one memory.fill", growThenFill(256), runtime.Policy{MemoryLimitMiB: 256}, 1, 20 * time.Millisecond, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rt.LoadBytes(ctx, "slack", tc.wasm, runtime.WithPolicy(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			spec := newMachine("m", "u", map[string]any{}).Spec
			var wg sync.WaitGroup
			took := make([]time.Duration, tc.guests)
			errs := make([]error, tc.guests)
			for g := range tc.guests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cctx, cancel := context.WithTimeout(ctx, slackDeadline)
					defer cancel()
					start := time.Now()
					errs[g] = p.Validate(cctx, spec, nil)
					took[g] = time.Since(start)
				}()
			}
			gcAfter, gcs := tc.gcAfter, max(tc.gcs, 1)
			if gcAfter == 0 {
				gcAfter = 300 * time.Millisecond // the guests are at it by now
			}
			var pause time.Duration
			var pauses []time.Duration
			stopsBefore := gcStops()
			for range gcs {
				time.Sleep(gcAfter)
				start := time.Now()
				goruntime.GC()
				pauses = append(pauses, time.Since(start))
				pause = max(pause, pauses[len(pauses)-1])
			}
			stopping := gcStops().maxSince(stopsBefore)
			wg.Wait()
			for g := range tc.guests {
				if runtime.ErrorClass(errs[g]) != runtime.ClassTimeout {
					t.Errorf("guest %d ended with %v, want a timeout", g, errs[g])
				}
				if took[g] > maxReturn {
					t.Errorf("guest %d returned %s after the call began, %s after its deadline", g, took[g], took[g]-slackDeadline)
				}
			}
			// Stopping the world is what a guest could hold up: it waits
			// for every running goroutine to reach a safe point.
			if stopping > maxGCPause {
				t.Errorf("a host GC waited %s for the world to stop (limit %s)", stopping, maxGCPause)
			}
			// The whole collection also needs CPU: with as many spinning
			// guests as there are Ps it shares them, as it would with as
			// many spinning goroutines (on 2 cores a pure-Go pair made a
			// runtime.GC() take 150-930 ms), so only a guest that leaves a
			// P free is held to maxGCPause overall.
			if tc.guests < goruntime.GOMAXPROCS(0) && pause > maxGCPause {
				t.Errorf("a host GC during the guest's run took %s (limit %s)", pause, maxGCPause)
			}
			t.Logf("%s: returned after %v; host GC took %v, stopping the world %s", rt.Engine(), took, pauses, stopping)
		})
	}
}

// The red team's module, a loop body of 200,000 unrolled i64.mul, is over
// the host's limits on one function: it is refused before it compiles.
func TestStraightLineBombIsRefused(t *testing.T) {
	rt := newRuntime(t)
	_, err := rt.LoadBytes(context.Background(), "bomb", straightLineLoop(200000))
	if !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), "limit Max") {
		t.Fatalf("want a limit named in ErrInvalidModule, got %v", err)
	}
}

// gcStopping is the histogram of the time GCs waited to stop the world.
type gcStopping struct{ h *metrics.Float64Histogram }

func gcStops() gcStopping {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}}
	metrics.Read(s)
	return gcStopping{s[0].Value.Float64Histogram()}
}

// maxSince is the upper bound of the highest bucket that gained a count
// since before.
func (g gcStopping) maxSince(before gcStopping) time.Duration {
	var max float64
	for i, c := range g.h.Counts {
		if c > before.h.Counts[i] {
			max = g.h.Buckets[i+1]
		}
	}
	return time.Duration(max * float64(time.Second))
}
