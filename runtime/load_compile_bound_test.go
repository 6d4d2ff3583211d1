package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
)

// Compile and instantiation cost within the load limits (issue 25, items
// 3 and 4): a load of the costliest module the limits accept returns at
// its deadline, not when the function a compilation worker is inside is
// done; and the red team's tables and elements, which cost every instance
// start on wazero a second and 30 MiB, are refused at load on either
// engine, naming the limit.

// compileBoundDeadline is the load deadline of these tests; compileBoundSlack
// how late a Load may return after it.
const (
	compileBoundDeadline = 2 * time.Second
	compileBoundSlack    = 500 * time.Millisecond
)

// nestedLoopsFunc is a function of depth nested loops, each branching back
// to its header and followed by filler instructions on its local (local.get
// 0; i32.const 1; i32.add; local.set 0), returning 0: among the functions
// within the limits, the one wazero takes longest to compile instrumented
// (a loop header gets a check of its own), about 0.7 s of CPU
// (WASMPROV_PRECHECK_ONE=1 in runtime/internal/precheck's TestWorstCase).
func nestedLoopsFunc(depth, filler int) genFunc {
	level := []byte{opLoop, opBlockEmpty, opLocalGet, 0, opBrIf, 0}
	level = append(level, bytes.Repeat([]byte{opLocalGet, 0, opI32Const, 1, 0x6a, opLocalSet, 0}, filler)...)
	body := bytes.Repeat(level, depth)
	body = append(body, bytes.Repeat([]byte{opEnd}, depth)...)
	body = append(body, opI32Const, 0)
	return genFunc{results: []byte{valI32}, locals: [][2]uint64{{1, valI32}}, body: body}
}

// costliestModule is a provider with as many of the costliest functions as
// the limits let it have (MaxFlowWork bounds them), each as large as
// MaxFunctionBytes and MaxInstructions let it be.
func costliestModule(t *testing.T) []byte {
	t.Helper()
	depth, filler := 900, 35
	module := func(n int) []byte {
		m := providerModule(0, nil)
		for range n {
			m.withFunc(nestedLoopsFunc(depth, filler))
		}
		return m.bytes()
	}
	for ; depth > 100; depth = depth * 15 / 16 {
		if _, err := precheck.Check(module(1), precheck.Limits{}); err == nil {
			break
		}
	}
	one, err := precheck.Measure(module(1))
	if err != nil {
		t.Fatal(err)
	}
	n := precheck.DefaultLimits.MaxFlowWork / one.FlowWork
	for ; n > 0; n-- {
		if _, err := precheck.Check(module(n), precheck.Limits{}); err == nil {
			break
		}
	}
	if n < 8 {
		t.Fatalf("only %d functions of %d nested loops pass the limits", n, depth)
	}
	wasm := module(n)
	st, _ := precheck.Measure(wasm)
	t.Logf("%d functions of %d nested loops: %d KiB, flow work %d of %d, units %d, instructions %d",
		n, depth, len(wasm)>>10, st.FlowWork, precheck.DefaultLimits.MaxFlowWork, st.MaxFlowUnits, st.MaxInstructions)
	return wasm
}

// TestRealTimeLoadOfCostliestModuleReturnsAtDeadline: the costliest module within
// the limits takes the engines many seconds to compile; a Load of it with
// a 2 s deadline fails with ErrLoadTimeout within half a second of the
// deadline. wazero stops its compilation workers only between functions:
// the Load returns without waiting for them (wazeroengine's compileWithin),
// and each finishes its function in the background; wasmtime's compiler
// process is killed.
func TestRealTimeLoadOfCostliestModuleReturnsAtDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles for seconds")
	}
	ctx := context.Background()
	rt := newRuntime(t)
	wasm := costliestModule(t)
	start := time.Now()
	p, err := rt.LoadBytes(ctx, "costliest", wasm, runtime.WithPolicy(runtime.Policy{LoadTimeout: runtime.Duration(compileBoundDeadline)}))
	took := time.Since(start)
	if err == nil {
		p.Close(ctx)
		t.Fatalf("the module loaded in %v, within the %v deadline: not costly enough for the test", took, compileBoundDeadline)
	}
	if !errors.Is(err, runtime.ErrLoadTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want ErrLoadTimeout and context.DeadlineExceeded, got %v", err)
	}
	if errors.Is(err, runtime.ErrInvalidModule) {
		t.Fatalf("the module is over the limits: %v", err)
	}
	t.Logf("%s: %v after %v", rt.Engine(), err, took.Round(time.Millisecond))
	if took > compileBoundDeadline+compileBoundSlack {
		t.Errorf("Load returned %v after its start, deadline %v", took, compileBoundDeadline)
	}
}

// tablesProvider is a provider with tables tables of size entries (maximum
// size) and elems elements (function 0) in active segments, one a table.
func tablesProvider(tables, size, elems int) []byte {
	m := providerModule(0, nil)
	var tbls, segs [][]byte
	for i := 0; i < tables; i++ {
		tbls = append(tbls, append(append([]byte{0x70, 0x01}, uleb(uint64(size))...), uleb(uint64(size))...))
	}
	for i := 0; i < tables; i++ {
		n := elems / tables
		seg := append([]byte{0x02}, uleb(uint64(i))...) // active, explicit table, function indices
		seg = append(seg, opI32Const, 0, opEnd, 0x00)
		seg = append(seg, uleb(uint64(n))...)
		segs = append(segs, append(seg, make([]byte, n)...))
	}
	m.extra = map[byte][]byte{4: vec(tbls...), 9: vec(segs...)}
	return m.bytes()
}

// TestTableAndElementBombsAreRefused: four tables of 262,144 entries
// filled by 1 M elements made every wazero instance start take 0.8-1.5 s
// and hold 30 MiB (BenchmarkInstanceTables in runtime/internal/precheck:
// 0.3 s, 41 MiB kept and 91 MiB allocated per instance on an idle
// machine); the precheck refuses it, and each half of it, on either
// engine, before anything compiles.
func TestTableAndElementBombsAreRefused(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	for _, c := range []struct {
		name, limit string
		wasm        []byte
	}{
		{"4 tables × 262,144 filled by 1 M elements", "MaxInitialTableEntries", tablesProvider(4, 1<<18, 1<<20)},
		{"2 tables × 131,072 filled by 262,144 elements", "MaxElements", tablesProvider(2, 1<<17, 1<<18)},
		{"4 tables × 131,072", "MaxInitialTableEntries", tablesProvider(4, 1<<17, 4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			p, err := rt.LoadBytes(ctx, "tables", c.wasm)
			took := time.Since(start)
			if err == nil {
				p.Close(ctx)
				t.Fatal("the module loaded")
			}
			if !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), c.limit) {
				t.Fatalf("want ErrInvalidModule naming %s, got %v", c.limit, err)
			}
			t.Logf("%s: refused after %v: %v", rt.Engine(), took.Round(time.Millisecond), err)
		})
	}
	// At the limits: four tables of 65,536 entries and 65,536 elements.
	d := precheck.DefaultLimits
	wasm := tablesProvider(4, d.MaxInitialTableEntries/4, d.MaxElements)
	p, err := rt.LoadBytes(ctx, "tables", wasm)
	if err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	p.Close(ctx)
}
