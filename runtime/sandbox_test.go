package runtime_test

// The malicious-guest suite: every subtest loads a hostile module next to a
// well-behaved fake provider and asserts exactly what the host does. A
// background goroutine keeps calling the fake provider throughout; after the
// suite, goroutines and heap must be back near where they started.
// docs/SECURITY.md has one row per subtest.

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
)

// runawayTimeout is the call timeout of guests that never return.
const runawayTimeout = 200 * time.Millisecond

type sandbox struct {
	t    *testing.T
	ctx  context.Context
	logs *testlog.Capture
	rt   *runtime.Runtime
}

// load loads a hostile module (a fixture name, or "go:<dir>" for a Go guest
// under internal/testing/attackguests) with a small memory limit and one instance.
func (s *sandbox) load(t *testing.T, name string, policy runtime.Policy) (*runtime.Provider, error) {
	t.Helper()
	if policy.MemoryLimitMiB == 0 {
		policy.MemoryLimitMiB = 4
	}
	if policy.PoolSize == 0 {
		policy.PoolSize = 1
	}
	var wasm []byte
	var err error
	provName := strings.TrimPrefix(name, "go:")
	if strings.HasPrefix(name, "go:") {
		wasm, err = readFile(testguest.Build(t, "internal/testing/attackguests/"+provName))
		if err != nil {
			t.Fatal(err)
		}
	} else {
		wasm = fixture(t, name)
	}
	p, err := s.rt.LoadBytes(s.ctx, provName, wasm, runtime.WithPolicy(policy))
	if err == nil {
		t.Cleanup(func() {
			if err := p.Close(context.Background()); err != nil {
				t.Errorf("closing %s: %v", provName, err)
			}
		})
	}
	return p, err
}

func (s *sandbox) mustLoad(t *testing.T, name string, policy runtime.Policy) *runtime.Provider {
	t.Helper()
	p, err := s.load(t, name, policy)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return p
}

// expectInvalid asserts that loading the fixture fails validation with
// every message in contains, and that nothing was left running.
func (s *sandbox) expectInvalid(t *testing.T, name string, contains ...string) {
	t.Helper()
	p, err := s.load(t, name, runtime.Policy{})
	if err == nil {
		_ = p.Close(s.ctx)
		t.Fatalf("loading %s succeeded; want ErrInvalidModule", name)
	}
	if !errors.Is(err, runtime.ErrInvalidModule) {
		t.Errorf("want ErrInvalidModule, got %v", err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("want %q in the load error, got %v", c, err)
		}
	}
}

func TestSandbox(t *testing.T) {
	ctx := context.Background()
	logs := testlog.NewCapture()
	rt := newRuntime(t, runtime.WithLogger(slog.New(logs)))
	s := &sandbox{t: t, ctx: ctx, logs: logs, rt: rt}

	// Build the Go guests before measuring, so the build's memory and the
	// test cache's goroutines are not counted.
	for _, g := range []string{"panics", "wasi"} {
		testguest.Build(t, "internal/testing/attackguests/"+g)
	}
	fake, err := rt.Load(ctx, testguest.Build(t, "examples/fake"), runtime.WithName("good"),
		runtime.WithPolicy(runtime.Policy{PoolSize: 2, Prewarm: 2}))
	if err != nil {
		t.Fatal(err)
	}
	m := testMachine()
	goodCall := func() error {
		inst, err := cloud.SeedProvider(fake, nil).Get(m)
		if err != nil {
			return err
		}
		if inst.Name() != "m1" || inst.ID() != "uid-1" {
			return errors.New("fake answered " + inst.Name() + "/" + inst.ID())
		}
		labels, err := cloud.SeedProvider(fake, nil).MachineMetricsLabels(m)
		if err != nil {
			return err
		}
		if labels["size"] != "fake" {
			return errors.New("fake labels wrong")
		}
		return nil
	}
	if err := goodCall(); err != nil {
		t.Fatal(err)
	}
	goroutinesBefore, heapBefore := settle()

	// The well-behaved provider answers throughout.
	var goodCalls, goodFailures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			goodCalls.Add(1)
			if err := goodCall(); err != nil {
				goodFailures.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
			}
		}
	}()

	t.Run("attacks", func(t *testing.T) { s.attacks(t) })

	close(stop)
	wg.Wait()
	if n := goodFailures.Load(); n != 0 {
		t.Errorf("the well-behaved provider failed %d of %d calls during the suite; first: %v", n, goodCalls.Load(), firstFailure.Load())
	}
	if goodCalls.Load() < 10 {
		t.Errorf("the well-behaved provider was called only %d times", goodCalls.Load())
	}
	if err := goodCall(); err != nil {
		t.Errorf("the well-behaved provider fails after the suite: %v", err)
	}

	// Every hostile provider is closed by now (subtest cleanups).
	goroutinesAfter, heapAfter := settle()
	t.Logf("goroutines %d -> %d, heap %d KiB -> %d KiB, good calls %d",
		goroutinesBefore, goroutinesAfter, heapBefore>>10, heapAfter>>10, goodCalls.Load())
	if goroutinesAfter > goroutinesBefore+2 {
		t.Errorf("goroutine leak: %d before the suite, %d after", goroutinesBefore, goroutinesAfter)
	}
	if heapAfter > heapBefore+heapSlack {
		t.Errorf("heap grew from %d KiB to %d KiB over the suite", heapBefore>>10, heapAfter>>10)
	}
}

// heapSlack is how much the live heap may grow over the whole suite: the
// hostile modules are closed, so only caches and the log capture remain.
const heapSlack = 8 << 20

// settle collects garbage until the goroutine count is stable and returns
// it with the live heap. Compiled code is released by finalizers, which
// need a GC to run and another to free what they dropped, so it collects a
// few times.
func settle() (goroutines int, heap uint64) {
	var ms goruntime.MemStats
	prev := -1
	for i := 0; i < 50; i++ {
		goruntime.GC()
		time.Sleep(10 * time.Millisecond)
		goroutines = goruntime.NumGoroutine()
		if goroutines == prev && i >= 4 {
			break
		}
		prev = goroutines
	}
	goruntime.ReadMemStats(&ms)
	return goroutines, ms.HeapAlloc
}

func (s *sandbox) attacks(t *testing.T) {
	ctx := s.ctx
	m := testMachine()

	t.Run("infinite loop", func(t *testing.T) {
		p := s.mustLoad(t, "loop", runtime.Policy{CallTimeout: runtime.Duration(runawayTimeout)})
		start := time.Now()
		_, err := cloud.SeedProvider(p, nil).Get(m)
		if d := time.Since(start); d > runawayTimeout+2*time.Second {
			t.Errorf("the runaway call took %v to stop", d)
		}
		expectCallError(t, err, runtime.ClassTimeout, runtime.ErrTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("want context.DeadlineExceeded, got %v", err)
		}
		s.logs.Expect(t, "loop", slog.LevelWarn, "guest call exceeded its deadline; instance discarded", 1)
		expectPool(t, p, 1)
	})

	t.Run("infinite loop cancelled by the caller", func(t *testing.T) {
		p := s.mustLoad(t, "loop", runtime.Policy{})
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := p.Get(cctx, m, nil)
		expectCallError(t, err, runtime.ClassCanceled, context.Canceled)
		expectPool(t, p, 1)
	})

	t.Run("host calls in a tight loop", func(t *testing.T) {
		p := s.mustLoad(t, "hostloop", runtime.Policy{CallTimeout: runtime.Duration(runawayTimeout)})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTimeout, runtime.ErrTimeout)
		s.logs.Expect(t, "hostloop", slog.LevelWarn, "guest call exceeded its deadline", 1)
		// The disabled-level logs never reached the handler.
		if n := len(s.logs.Records("hostloop", "spam")); n != 0 {
			t.Errorf("%d guest log records below the enabled level reached the handler", n)
		}
		expectPool(t, p, 1)
	})

	t.Run("stack exhaustion", func(t *testing.T) {
		p := s.mustLoad(t, "recursion", runtime.Policy{})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap, "stack overflow")
		s.logs.Expect(t, "recursion", slog.LevelWarn, "guest trapped; instance discarded", 1)
		expectPool(t, p, 1)
	})

	t.Run("memory growth to the limit", func(t *testing.T) {
		p := s.mustLoad(t, "memgrow", runtime.Policy{MemoryLimitMiB: 2})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		// memory.grow answered -1 at 2 MiB; the guest reported it.
		expectCallError(t, err, runtime.ClassTransient, nil, "memory.grow refused:")
		expectPool(t, p, 0)
	})

	t.Run("one huge memory.grow", func(t *testing.T) {
		p := s.mustLoad(t, "hugealloc", runtime.Policy{})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTransient, nil, "huge grow refused")
		expectPool(t, p, 0)
	})

	t.Run("unreachable", func(t *testing.T) {
		p := s.mustLoad(t, "unreachable", runtime.Policy{})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap, "unreachable")
		recs := s.logs.Expect(t, "unreachable", slog.LevelWarn, "guest trapped; instance discarded", 1)
		if len(recs) == 1 && recs[0].Attrs["method"] != "Get" {
			t.Errorf("trap log without the method: %v", recs[0])
		}
		expectPool(t, p, 1)
		// The next call gets a fresh instance and traps the same way.
		_, err = cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap)
		expectPool(t, p, 2)
	})

	t.Run("out-of-bounds and overlapping pointers to every host function", func(t *testing.T) {
		p := s.mustLoad(t, "hostcalls", runtime.Policy{MemoryLimitMiB: 8})
		inst, err := cloud.SeedProvider(p, nil).Get(m)
		if err != nil {
			t.Fatalf("a check in the guest failed (status 100+N names it): %v", err)
		}
		if inst.Name() != "x" {
			t.Errorf("got instance %q", inst.Name())
		}
		expectPool(t, p, 0)
	})

	t.Run("capability refused by policy", func(t *testing.T) {
		p := s.mustLoad(t, "hostcalls", runtime.Policy{MemoryLimitMiB: 8, Capabilities: []string{"log"}})
		recs := s.logs.Expect(t, "hostcalls", slog.LevelWarn, "policy refuses capabilities the module declares", 1)
		if len(recs) == 1 && !strings.Contains(recs[0].Attrs["refused"], "config_var") {
			t.Errorf("refusal log does not name config_var: %v", recs[0])
		}
		_, err := cloud.SeedProvider(p, nil).Get(m)
		// Check 14 (config_var with a valid request) got not-declared.
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "unknown status 114")
		// Check 14 called config_var with valid arguments; check 16's result
		// buffer is out of bounds, which is refused before the capability
		// is looked at (abi/SPEC.md §6.4).
		s.logs.Expect(t, "hostcalls", slog.LevelWarn, "guest called a host function it was not granted", 1)
		expectPool(t, p, 1)
	})

	t.Run("host functions not declared", func(t *testing.T) {
		p := s.mustLoad(t, "undeclared", runtime.Policy{AllowedHosts: []string{"169.254.169.254"}})
		if _, err := cloud.SeedProvider(p, nil).Get(m); err != nil {
			t.Fatalf("the guest did not get not-declared from log and http_do: %v", err)
		}
		recs := s.logs.Expect(t, "undeclared", slog.LevelWarn, "guest called a host function it was not granted", 2)
		if len(recs) == 2 && (recs[0].Attrs["function"] != "log" || recs[1].Attrs["function"] != "http_do") {
			t.Errorf("refusals: %v", recs)
		}
		if n := len(s.logs.Records("undeclared", "exfiltrate")); n != 0 {
			t.Errorf("the undeclared log call was emitted")
		}
		expectPool(t, p, 0)
	})

	t.Run("result larger than the cap", func(t *testing.T) {
		p := s.mustLoad(t, "bigresult", runtime.Policy{MemoryLimitMiB: 8})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		// output refused the 5 MiB; the guest returned ok with no result.
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "Get returned status OK, but the host refused its `output` with TOO_LARGE (-6)")
		expectPool(t, p, 0)
	})

	t.Run("invalid JSON result", func(t *testing.T) {
		p := s.mustLoad(t, "badjson", runtime.Policy{})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "Get returned status OK with an output that is not an Instance document")
		expectPool(t, p, 0)
	})

	t.Run("invalid UTF-8 result", func(t *testing.T) {
		p := s.mustLoad(t, "badutf8", runtime.Policy{})
		inst, err := cloud.SeedProvider(p, nil).Get(m)
		if err != nil {
			t.Fatal(err)
		}
		// encoding/json replaces each invalid byte with U+FFFD.
		if inst.Name() != "\ufffd\ufffd" {
			t.Errorf("name %q, want two U+FFFD", inst.Name())
		}
	})

	t.Run("unknown status", func(t *testing.T) {
		p := s.mustLoad(t, "badstatus", runtime.Policy{})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "unknown status 77")
		expectPool(t, p, 1)
	})

	t.Run("missing exports", func(t *testing.T) {
		s.expectInvalid(t, "missingexports", `missing export "wasmprov_get"`, `missing export "wasmprov_capabilities"`,
			`missing export "wasmprov_migrate_uid"`)
	})

	t.Run("exports with wrong signatures", func(t *testing.T) {
		s.expectInvalid(t, "wrongsig", `export "wasmprov_get" has signature (func (param i32) (result i64))`,
			`export "wasmprov_capabilities" has signature (func (result i32))`, `"_initialize" must take and return nothing`)
	})

	t.Run("wrong ABI version", func(t *testing.T) {
		s.expectInvalid(t, "abi0", "module implements ABI version 0, this host implements version 1")
	})

	t.Run("future ABI version", func(t *testing.T) {
		s.expectInvalid(t, "abi2", "module implements ABI version 2, this host implements version 1")
	})

	t.Run("future capability bits", func(t *testing.T) {
		s.expectInvalid(t, "futurecaps", "declares unknown capability bits 0x10000000000")
	})

	t.Run("unknown host function", func(t *testing.T) {
		s.expectInvalid(t, "unknownimport", "imports unknown host function wasmprov_v1.exec")
	})

	t.Run("future ABI import module", func(t *testing.T) {
		s.expectInvalid(t, "importv2", "imports wasmprov_v2.http_do: this host implements ABI wasmprov_v1 only")
	})

	t.Run("import from a foreign module", func(t *testing.T) {
		s.expectInvalid(t, "foreignimport", `imports env.system from unknown module "env"`)
	})

	t.Run("host functions outside a call", func(t *testing.T) {
		// initcalls reports ABI version 1 only if every host function it
		// called from _initialize answered unavailable.
		p := s.mustLoad(t, "initcalls", runtime.Policy{})
		if _, err := cloud.SeedProvider(p, nil).Get(m); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("infinite loop in _initialize", func(t *testing.T) {
		lctx, cancel := context.WithTimeout(ctx, runawayTimeout)
		defer cancel()
		start := time.Now()
		p, err := s.rt.LoadBytes(lctx, "loopinit", fixture(t, "loopinit"), runtime.WithPolicy(runtime.Policy{MemoryLimitMiB: 4}))
		if err == nil {
			_ = p.Close(ctx)
			t.Fatal("a module whose _initialize never returns loaded")
		}
		if d := time.Since(start); d > runawayTimeout+2*time.Second {
			t.Errorf("Load took %v to give up", d)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("want a deadline error, got %v", err)
		}
	})

	t.Run("stdout flood", func(t *testing.T) {
		p := s.mustLoad(t, "flood", runtime.Policy{})
		if _, err := cloud.SeedProvider(p, nil).Get(m); err != nil {
			t.Fatal(err)
		}
		s.expectFlood(t, "stdout", slog.LevelInfo)
	})

	t.Run("stderr flood", func(t *testing.T) {
		p := s.mustLoad(t, "flood", runtime.Policy{})
		if err := cloud.SeedProvider(p, nil).Validate(m.Spec); err != nil {
			t.Fatal(err)
		}
		s.expectFlood(t, "stderr", slog.LevelWarn)
	})

	t.Run("Go panic", func(t *testing.T) {
		p := s.mustLoad(t, "go:panics", runtime.Policy{MemoryLimitMiB: 64})
		_, err := cloud.SeedProvider(p, nil).Get(m)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrGuestPanic, "attack: deliberate panic")
		recs := s.logs.Expect(t, "panics", slog.LevelWarn, "guest panicked; instance discarded", 1)
		if len(recs) == 1 && !strings.Contains(recs[0].Attrs["panic"], "attack: deliberate panic") {
			t.Errorf("panic log: %v", recs[0])
		}
		expectPool(t, p, 1)

		// Nil dereference: a runtime panic, recovered the same way.
		err = cloud.SeedProvider(p, nil).Delete(m, nil)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrGuestPanic, "nil pointer dereference")
		expectPool(t, p, 2)

		// A panic on another goroutine is fatal to the Go runtime, which
		// prints it to stderr and aborts: a trap.
		err = cloud.SeedProvider(p, nil).MigrateUID(m, "new-uid")
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap, "runtime.fatalpanic")
		if len(s.logs.Records("panics", "panic: attack: panic on another goroutine")) != 1 {
			t.Errorf("the guest's stderr did not reach the log")
		}
		expectPool(t, p, 3)

		// 1 GiB in one make, beyond the 64 MiB limit: the Go runtime throws
		// "out of memory" and aborts.
		_, err = cloud.SeedProvider(p, nil).Create(m, nil, "")
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap, "runtime.mallocgcLarge")
		if len(s.logs.Records("panics", "fatal error: out of memory")) != 1 {
			t.Errorf("no out-of-memory message from the guest")
		}
		s.logs.Expect(t, "panics", slog.LevelWarn, "guest trapped; instance discarded", 2)
		expectPool(t, p, 4)

		// And the provider still serves the methods that behave.
		labels, err := cloud.SeedProvider(p, nil).MachineMetricsLabels(m)
		if err != nil || labels["ok"] != "true" {
			t.Errorf("after the crashes: %v %v", labels, err)
		}
	})

	t.Run("WASI filesystem, env, sockets, clock and random", func(t *testing.T) {
		// A real listener on the host that the guest tries to dial.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int64
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		target := testMachine()
		target.Name = ln.Addr().String()
		p := s.mustLoad(t, "go:wasi", runtime.Policy{MemoryLimitMiB: 64})
		labels, err := cloud.SeedProvider(p, nil).MachineMetricsLabels(target)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"readPasswd": "error", "readRoot": "error", "writeTmp": "error",
			"env": "GOGC=50", "home": "false", "dial": "error",
			// Go's in-process fake network for wasip1: no host socket.
			"listen": "nil",
			// wazero's fake clock; crypto/rand (compared below).
			"year": "2022", "random": labels["random"],
		}
		if !maps.Equal(labels, want) {
			t.Errorf("the guest saw %v\nwant %v", labels, want)
		}
		// Randomness is never a fixed stream, random capability or not: a
		// second instance draws other bytes (with wazero's fixed-seed
		// source every instance of a provider made the same "random" SSH
		// key).
		p2 := s.mustLoad(t, "go:wasi", runtime.Policy{MemoryLimitMiB: 64})
		labels2, err := cloud.SeedProvider(p2, nil).MachineMetricsLabels(target)
		if accepted.Load() != 0 {
			t.Errorf("the guest connected to a host socket")
		}
		if err != nil || labels2["random"] == labels["random"] || len(labels["random"]) != 16 {
			t.Errorf("two instances drew the same random bytes without the random capability: %q vs %q (%v)", labels["random"], labels2["random"], err)
		}
	})

}

// expectFlood asserts that the flood fixture's 32 MiB of 64 KiB lines became
// log lines of 4 KiB, as many as fit in 1 MiB with their records' cost,
// and one warning.
func (s *sandbox) expectFlood(t *testing.T, stream string, level slog.Level) {
	t.Helper()
	var lines int
	for _, r := range s.logs.Records("flood", "") {
		if r.Attrs["stream"] != stream || strings.Contains(r.Msg, "exceeds") {
			continue
		}
		lines++
		if len(r.Msg) != 4096 || r.Level != level {
			t.Errorf("%s line of %d bytes at %s; want 4096 at %s", stream, len(r.Msg), r.Level, level)
			break
		}
	}
	if want := (1 << 20) / (4096 + 128); lines != want {
		t.Errorf("%d %s lines logged, want %d (1 MiB cap / 4 KiB lines and 128 bytes a record)", lines, stream, want)
	}
	var warnings int
	for _, r := range s.logs.Records("flood", "guest output exceeds limit") {
		if r.Attrs["stream"] == stream && r.Level == slog.LevelWarn {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d %s output warnings, want 1", warnings, stream)
	}
}

// TestDeadlineRace races deadlines against normal completion: calls on the
// fake guest with deadlines around a call's own duration, two at a time.
// Each call either succeeds or times out, never anything else; every
// interrupted instance is discarded (its flag is set); the provider answers
// correctly afterwards. Under -race this also checks that setting the flag
// from the context's AfterFunc goroutine is race-free.
func TestDeadlineRace(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	p, err := rt.Load(ctx, testguest.Build(t, "examples/fake"), runtime.WithPolicy(runtime.Policy{PoolSize: 2, Prewarm: 2}))
	if err != nil {
		t.Fatal(err)
	}
	cp := p
	m := testMachine()
	calls := 40
	if testing.Short() {
		calls = 10
	}
	var timeouts, oks atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				d := time.Duration(5+(i*37+g*11)%150) * time.Microsecond
				cctx, cancel := context.WithTimeout(ctx, d)
				inst, err := cp.Get(cctx, m, nil)
				cancel()
				switch {
				case err == nil:
					if inst.Name() != "m1" {
						t.Errorf("wrong answer %q", inst.Name())
					}
					oks.Add(1)
				case runtime.ErrorClass(err) == runtime.ClassTimeout:
					timeouts.Add(1)
				default:
					t.Errorf("call %d: %v", i, err)
				}
			}
		}(g)
	}
	wg.Wait()
	st := p.PoolStats()
	inUse, discarded := st.InUse, st.Discarded
	t.Logf("%d ok, %d timed out, %d instances discarded", oks.Load(), timeouts.Load(), discarded)
	if inUse != 0 || discarded > timeouts.Load() {
		t.Errorf("pool: %d in use, %d discarded for %d timeouts", inUse, discarded, timeouts.Load())
	}
	if inst, err := cloud.SeedProvider(p, nil).Get(m); err != nil || inst.Name() != "m1" {
		t.Fatalf("after the race: %v %v", inst, err)
	}

	// The same race through the policy's call timeout (calls without a
	// deadline of their own use a reusable timer per instance).
	pt, err := rt.Load(ctx, testguest.Build(t, "examples/fake"), runtime.WithName("fake-timer"),
		runtime.WithPolicy(runtime.Policy{PoolSize: 2, Prewarm: 2, CallTimeout: runtime.Duration(25 * time.Microsecond)}))
	if err != nil {
		t.Fatal(err)
	}
	var timerTimeouts, timerOKs atomic.Int64
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				inst, err := cloud.SeedProvider(pt, nil).Get(m)
				switch {
				case err == nil:
					if inst.Name() != "m1" {
						t.Errorf("wrong answer %q", inst.Name())
					}
					timerOKs.Add(1)
				case runtime.ErrorClass(err) == runtime.ClassTimeout:
					timerTimeouts.Add(1)
				default:
					t.Errorf("call %d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	st = pt.PoolStats()
	inUse, discarded = st.InUse, st.Discarded
	t.Logf("policy timeout: %d ok, %d timed out, %d instances discarded", timerOKs.Load(), timerTimeouts.Load(), discarded)
	if inUse != 0 || discarded > timerTimeouts.Load() {
		t.Errorf("pool: %d in use, %d discarded for %d timeouts", inUse, discarded, timerTimeouts.Load())
	}
}
