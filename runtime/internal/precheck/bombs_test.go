package precheck

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"github.com/wasmprov/wasmprov/internal/testing/race"
)

// The red team's compile bombs, each refused before anything compiles,
// in well under 10 ms and without allocating in proportion to what the
// module declares.
func TestBombs(t *testing.T) {
	loops := func(n int) []byte { return ret0(repeat(cat(opLoop, opEnd), n)) }
	nestedLoops := func(n int) []byte { return cat(repeat(opLoop, n), repeat(opEnd, n)) }
	var bigLoops []byte // 1,000 functions of 10,000 loops: 30 MB
	{
		f := loops(10_000)
		codes := make([][]byte, 1000)
		for i := range codes {
			codes[i] = f
		}
		bigLoops = funcsModule(codes...)
	}
	brTable := cat(opLocalGet(0), []byte{0x0e}, leb(1_000_000-1), make([]byte, 1_000_000))
	imp := func(kind byte, desc ...byte) []byte { return cat(name("env"), name("t"), []byte{kind}, desc) }
	for _, c := range []struct {
		name, limit string
		wasm        []byte
		l           Limits
	}{
		// 4 G locals in a module of a few bytes: crashed the host.
		{"4G locals", "MaxLocals", funcsModule(body([][2]uint64{{0xffffffff, 0x7f}}, finish(nil))), Limits{}},
		{"4G locals in two groups", "MaxLocals", funcsModule(body([][2]uint64{{0xffffffff, 0x7f}, {0xffffffff, 0x7e}}, finish(nil))), Limits{}},
		// 1,000 functions of 10,000 loops: 38 minutes of CPU.
		{"1000 functions × 10,000 loops", "MaxLoops", bigLoops, Limits{}},
		// 10,000 nested loops: 24-32 s instrumented.
		{"10,000 nested loops", "MaxLoops", funcsModule(ret0(nestedLoops(10_000))), Limits{}},
		// 100,000 nested blocks: 1m22s-1m40s, 270 MiB.
		{"100,000 nested blocks", "MaxFunctionBytes", funcsModule(ret0(repeat(opBlock, 100_000), repeat(opEnd, 100_000))), Limits{}},
		{"100,000 nested blocks, any body size", "MaxNesting", funcsModule(ret0(repeat(opBlock, 100_000), repeat(opEnd, 100_000))), Limits{MaxFunctionBytes: 1 << 30}},
		// A br_table of 1 M targets and 100,000 nested loops: loading after 3 min.
		{"br_table 1M in 100,000 nested loops", "MaxFunctionBytes", funcsModule(ret0(repeat(opLoop, 100_000), brTable, repeat(opEnd, 100_000))), Limits{}},
		{"br_table 1M in 100,000 nested loops, any body size", "MaxLoops", funcsModule(ret0(repeat(opLoop, 100_000), brTable, repeat(opEnd, 100_000))), Limits{MaxFunctionBytes: 1 << 30}},
		{"br_table 1M, any body size", "MaxBrTableTargets", funcsModule(ret0(opBlock, brTable, opEnd)), Limits{MaxFunctionBytes: 1 << 30}},
		// A start function that loops: hung Load.
		{"looping start function", "NoStartSection", (&gen{types: [][]byte{funcType(nil, nil)}, funcs: []uint32{0}, start: leb(0),
			codes: [][]byte{body(nil, cat(opLoop, []byte{0x0c, 0x00}, opEnd, opEnd))}}).bytes(), Limits{}},
		// A table imported from env: failed with "guest trapped".
		{"table import", "FunctionImportsOnly", (&gen{imports: [][]byte{imp(0x01, 0x70, 0x00, 0x01)}}).bytes(), Limits{}},
		// Shared memory and memory.atomic.wait32 with no timeout (wasmtime).
		{"shared memory wait", "NoSharedMemory", (&gen{types: [][]byte{i32i32}, funcs: []uint32{0}, mems: [][]byte{{0x03, 0x01, 0x01}},
			codes: [][]byte{ret0(opI32Const(0), opI32Const(0), []byte{0x42, 0x7f}, []byte{0xfe, 0x01, 0x02, 0x00}, []byte{0x1a})}}).bytes(), Limits{}},
		// A table of 200 M entries up front (table.grow's is bounded by the rewrite).
		{"table of 200M", "MaxTableEntries", (&gen{tables: [][]byte{cat([]byte{0x70, 0x00}, leb(200_000_000))}}).bytes(), Limits{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The best of 5: the first run on a loaded machine pays for
			// page faults and preemption, not for Check's work.
			var err error
			d := time.Hour
			for i := 0; i < 5; i++ {
				start := time.Now()
				_, err = Check(c.wasm, c.l)
				d = min(d, time.Since(start))
			}
			var r *Rejection
			if !errors.As(err, &r) || r.Limit != c.limit {
				t.Fatalf("Check: %v, want a %s rejection", err, c.limit)
			}
			limit := 10 * time.Millisecond
			if race.Enabled {
				limit *= 10
			}
			if d > limit {
				t.Errorf("refused in %v, want < %v", d, limit)
			}
			// No collection while measuring: a GC empties sync.Pool, and
			// the next Check makes its frame stack again (14 KB a run
			// measured on a loaded, cold CI machine on 2026-12-07),
			// which is the pool's behaviour, not Check's. One run first
			// refills the pool.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			_, _ = Check(c.wasm, c.l)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const runs = 20
			for i := 0; i < runs; i++ {
				_, _ = Check(c.wasm, c.l)
			}
			runtime.ReadMemStats(&after)
			perRun := (after.TotalAlloc - before.TotalAlloc) / runs
			bound := uint64(4096)
			if race.Enabled {
				// Under the race detector sync.Pool drops a share of
				// what is put back, so some runs make a new frame stack:
				// bounded by the nesting limit (and its growth), still
				// nothing like what these modules declare.
				bound += 2 * uint64(unsafe.Sizeof(flowFrame{})) * uint64(c.l.withDefaults().MaxNesting+1)
			}
			if perRun > bound {
				t.Errorf("Check allocated %d bytes a run", perRun)
			}
			t.Logf("%v: %v, %d bytes allocated", d, err, perRun)
		})
	}
}

// TestAllocsAccepted: accepting a module allocates a fixed number of
// times (the checker, the types' parameter counts), whatever its code
// holds.
func TestAllocsAccepted(t *testing.T) {
	small := funcsModule(ret0())
	big := funcsModule(ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 1000)), ret0(repeat(opBlock, 1000), repeat(opEnd, 1000)),
		ret0(opBlock, opLocalGet(0), []byte{0x0e}, leb(999), make([]byte, 1000), opEnd))
	var allocs []float64
	for _, m := range [][]byte{small, big} {
		allocs = append(allocs, testing.AllocsPerRun(20, func() {
			if _, err := Check(m, Limits{}); err != nil {
				t.Fatal(err)
			}
		}))
	}
	bound := 8.0
	if race.Enabled {
		// Under the race detector sync.Pool drops a share of what is
		// put back: a run may make a new frame stack (the slice and its
		// box), two allocations.
		bound += 2
	}
	if allocs[0] > bound || allocs[1] > bound {
		t.Errorf("allocations: %v for a small and a big module", allocs)
	}
}
