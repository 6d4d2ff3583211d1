package wasip1_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// The loop guest: host calls that take long, and loops of host calls.
// Memory: a relative one-hour clock subscription at 0, events at 64,
// nevents at 128; iovecs (all empty) from 64 KiB.
const (
	loopSubs     = 0
	loopEvents   = 64
	loopNevents  = 128
	loopIovs     = 1 << 16
	loopMemPages = 1100 // 68.75 MiB
)

// burnBytes is what the test host function copies per call.
const burnBytes = 4 << 20

func loopGuest() []byte {
	p := func(t ...byte) []byte { return t }
	m := module{
		imports: []imp{
			{"wasi_snapshot_preview1", "poll_oneoff", sig{p(tI32, tI32, tI32, tI32), p(tI32)}},
			{"wasi_snapshot_preview1", "random_get", sig{p(tI32, tI32), p(tI32)}},
			{"wasi_snapshot_preview1", "fd_write", sig{p(tI32, tI32, tI32, tI32), p(tI32)}},
			{"wasmprov_v1", "burn", sig{p(tI32, tI32), p(tI32)}},
			{"wasi_snapshot_preview1", "sched_yield", sig{nil, p(tI32)}},
			{"wasi_snapshot_preview1", "clock_time_get", sig{p(tI32, tI64, tI32), p(tI32)}},
		},
		minPages: loopMemPages, maxPages: loopMemPages, exportMemory: true,
		data: []segment{{loopSubs, clockSubBytes(time.Hour)}},
	}
	loop := func(body ...[]byte) []byte {
		return cat([]byte{0x03, 0x40}, cat(body...), []byte{0x0c, 0x00, 0x0b}) // loop ... br 0 end
	}
	// repeat runs body local0 times.
	repeat := func(body ...[]byte) []byte {
		return cat([]byte{0x02, 0x40, 0x03, 0x40}, localGet(0), []byte{0x45, 0x0d, 0x01}, // block loop; n == 0: br_if 1
			cat(body...), localGet(0), i32Const(1), []byte{0x6b}, localSet(0), []byte{0x0c, 0x00, 0x0b, 0x0b})
	}
	drop := []byte{0x1a}
	m.funcs = []fun{
		{export: "sleep_hour", sig: sig{nil, p(tI32)}, body: cat(i32Const(loopSubs), i32Const(loopEvents), i32Const(1), i32Const(loopNevents), call(0))},
		{export: "loop_burn", sig: sig{nil, nil}, body: loop(i32Const(0), i32Const(0), call(3), drop)},
		{export: "loop_random", sig: sig{p(tI32), nil}, body: loop(i32Const(loopIovs), localGet(0), call(1), drop)},
		{export: "loop_write", sig: sig{p(tI32), nil}, body: loop(i32Const(1), i32Const(loopIovs), localGet(0), i32Const(loopNevents), call(2), drop)},
		{export: "yields", sig: sig{p(tI32), nil}, body: repeat(call(4), drop)},
		{export: "clocks", sig: sig{p(tI32), nil}, body: repeat(i32Const(1), i64Const(0), i32Const(loopNevents), call(5), drop)},
		{export: "burns", sig: sig{p(tI32), nil}, body: repeat(i32Const(1), i32Const(0), call(3), drop)}, // copies nothing
	}
	return m.encode()
}

func clockSubBytes(d time.Duration) []byte {
	b := make([]byte, 48)
	b[0] = 0x42              // userdata
	b[8] = 0                 // clock
	b[16] = 1                // monotonic
	for k := 0; k < 8; k++ { // timeout
		b[24+k] = byte(uint64(d) >> (8 * k))
	}
	return b // precision 0, flags 0: relative
}

// burn is a host function that copies 4 MiB, or, with n > 0 as its first
// parameter, nothing (for the host-call benchmark).
func burn() hostmodule.Function {
	src, dst := make([]byte, burnBytes), make([]byte, burnBytes)
	return hostmodule.Function{Module: abi.ModuleName, Name: "burn", Params: []byte{tI32, tI32}, Results: []byte{tI32},
		Fn: func(_ context.Context, _ hostmodule.Memory, stack []uint64) {
			if stack[0] == 0 {
				copy(dst, src)
			}
			stack[0] = 0
		}}
}

func loopInstance(t testing.TB, te testEngine, clock bool) engine.Instance {
	ctx := context.Background()
	mod, err := te.new(t).Compile(ctx, loopGuest(), engine.ModuleConfig{
		MemoryLimitPages: loopMemPages, Interruptible: true, HostFunctions: []hostmodule.Function{burn()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(ctx) })
	inst, err := mod.Instantiate(ctx, engine.InstanceConfig{Env: []string{"GOGC=50"}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(ctx) })
	return inst
}

// TestRealTimeInterruptEndsLongHostCalls: a call that sleeps an hour in
// poll_oneoff (clock granted), or loops over expensive host calls — 4 MiB
// copied per wasmprov_v1 call, 64 MiB of random_get, fd_write of 8 million
// iovecs — is interrupted at 1 s and returns within 1.1 s, on every engine,
// whether the interrupt comes from Interrupt (the runtime's call timeout)
// or, for the sleep, from the call's context alone.
func TestRealTimeInterruptEndsLongHostCalls(t *testing.T) {
	const at, limit = time.Second, 1100 * time.Millisecond
	cases := []struct {
		name    string
		fn      string
		arg     []uint64
		clock   bool
		ctxOnly bool // no Interrupt: the call's context ends
	}{
		{"poll_oneoff sleeping an hour", "sleep_hour", nil, true, false},
		{"poll_oneoff sleeping an hour, context deadline", "sleep_hour", nil, true, true},
		{"host function copying 4 MiB in a loop", "loop_burn", nil, false, false},
		{"random_get of 64 MiB in a loop", "loop_random", []uint64{64 << 20}, false, false},
		{"fd_write of 8M iovecs in a loop", "loop_write", []uint64{8 << 20}, false, false},
	}
	for _, te := range engines {
		for _, c := range cases {
			t.Run(te.name+"/"+c.name, func(t *testing.T) {
				inst := loopInstance(t, te, c.clock)
				f := inst.Function(c.fn)
				ctx := context.Background()
				if c.ctxOnly {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, at)
					defer cancel()
				} else {
					timer := time.AfterFunc(at, inst.Interrupt)
					defer timer.Stop()
				}
				stack := make([]uint64, 1)
				copy(stack, c.arg)
				start := time.Now()
				done := make(chan error, 1)
				go func() { done <- f.Call(ctx, stack) }()
				select {
				case err := <-done:
					elapsed := time.Since(start)
					t.Logf("returned after %v (%v after the interrupt): %v", elapsed.Round(time.Millisecond), (elapsed - at).Round(time.Millisecond), firstLine(err))
					if err == nil {
						t.Fatal("the call returned no error")
					}
					var exit *engine.ExitError
					if errors.As(err, &exit) {
						t.Fatalf("the call exited: %v", err)
					}
					if elapsed > limit {
						t.Errorf("returned %v after the start, want within %v", elapsed, limit)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the call did not return within 10 s") // and leaks: the test binary exits
				}
			})
		}
	}
}

// TestRealTimeContextEndsStartFunction: a start section that loops over host
// calls (or, on wazero, over anything: it yields) cannot be interrupted by
// the runtime, which has no instance yet; the end of Instantiate's context
// stops it.
func TestRealTimeContextEndsStartFunction(t *testing.T) {
	p := func(t ...byte) []byte { return t }
	for _, spin := range []struct {
		name string
		body []byte
	}{
		{"sched_yield", cat([]byte{0x03, 0x40}, call(0), []byte{0x1a, 0x0c, 0x00, 0x0b})},
		{"nothing", []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}},
	} {
		m := module{
			imports:  []imp{{"wasi_snapshot_preview1", "sched_yield", sig{nil, p(tI32)}}},
			funcs:    []fun{{sig: sig{nil, nil}, body: spin.body}},
			minPages: 1, maxPages: 1, exportMemory: true, start: 2,
		}
		for _, te := range engines {
			if te.name == "wasmtime" && spin.name == "nothing" {
				continue // no host call: only the flag memory could stop it, which does not exist yet
			}
			t.Run(te.name+"/"+spin.name, func(t *testing.T) {
				bg := context.Background()
				mod, err := te.new(t).Compile(bg, m.encode(), engine.ModuleConfig{MemoryLimitPages: 1, Interruptible: true})
				if err != nil {
					t.Fatal(err)
				}
				defer mod.Close(bg)
				ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
				defer cancel()
				start := time.Now()
				done := make(chan error, 1)
				go func() {
					inst, err := mod.Instantiate(ctx, engine.InstanceConfig{})
					if err == nil {
						inst.Close(bg)
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Instantiate: %v, want context.DeadlineExceeded", err)
					}
					if d := time.Since(start); d > 500*time.Millisecond {
						t.Errorf("Instantiate returned after %v", d)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Instantiate did not return")
				}
			})
		}
	}
}

func firstLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s := err.Error()
	for k := range s {
		if s[k] == '\n' {
			return s[:k]
		}
	}
	return s
}

// BenchmarkHostCall is the cost of one host call from the guest (a loop of
// 1000 per guest call): WASI sched_yield and clock_time_get (fake), and a
// wasmprov_v1 function doing nothing.
func BenchmarkHostCall(b *testing.B) {
	for _, te := range engines {
		inst := loopInstance(b, te, false)
		for _, fn := range []string{"yields", "clocks", "burns"} {
			f := inst.Function(fn)
			b.Run(te.name+"/"+fn, func(b *testing.B) {
				stack := make([]uint64, 1)
				for b.Loop() {
					stack[0] = 1000
					if err := f.Call(context.Background(), stack); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/hostcall")
			})
		}
	}
}
