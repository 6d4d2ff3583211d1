package precheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// worst is a module that sits at one or more limits.
type worst struct {
	name string
	wasm []byte
}

// worstModules are the worst modules within every limit of l, one per
// shape: as many functions of the shape (each at the per-function limits
// the shape stresses) as the module-wide limits allow (MaxFunctions,
// MaxFlowWork, MaxModuleFlowUnits, MaxBulkInstructions,
// MaxModuleLocalsWork, MaxModuleMemoryAccesses, MaxModuleBytes), and the rest of
// the module's bytes in straight-line functions of MaxFunctionBytes, the
// most expensive code per byte that has neither control flow nor memory
// accesses. The combo modules put several shapes in one module, each
// taking what it can of the budgets the others left.
func worstModules(tb testing.TB, l Limits) []worst {
	l = l.withDefaults()
	shapes, combo := worstShapes(tb, l)
	type shape = worstShape
	module := worstModule
	straight := shapes[0].body
	// budget is what the module-wide limits leave.
	type budget struct{ bytes, funcs, flowWork, flowUnits, bulk, localsWork, accesses int }
	full := budget{l.MaxModuleBytes - 4096, l.MaxFunctions, l.MaxFlowWork, l.MaxModuleFlowUnits - 2000, l.MaxBulkInstructions,
		l.MaxModuleLocalsWork, l.MaxModuleMemoryAccesses}
	// take returns how many functions of s fit in b, and takes them.
	take := func(b *budget, s shape) int {
		st, err := Measure(module(s.types, s.body))
		if err != nil {
			tb.Fatalf("%s: %v", s.name, err)
		}
		if _, err := Check(module(s.types, s.body), l); err != nil {
			tb.Fatalf("%s: one function is over the limits: %v", s.name, err)
		}
		n := min(b.funcs, b.bytes/(len(s.body)+2))
		for _, c := range []struct{ per, left int }{
			{st.FlowWork, b.flowWork}, {st.FlowUnits, b.flowUnits}, {st.BulkInstructions, b.bulk},
			{st.LocalsWork, b.localsWork}, {st.MemoryAccesses, b.accesses},
		} {
			if c.per > 0 {
				n = min(n, c.left/c.per)
			}
		}
		n = max(n, 0)
		b.bytes -= n * (len(s.body) + 2)
		b.funcs -= n
		b.flowWork -= n * st.FlowWork
		b.flowUnits -= n * st.FlowUnits
		b.bulk -= n * st.BulkInstructions
		b.localsWork -= n * st.LocalsWork
		b.accesses -= n * st.MemoryAccesses
		return n
	}
	var out []worst
	build := func(name string, types [][]byte, parts ...shape) {
		b := full
		var codes [][]byte
		var counts []string
		for _, s := range parts {
			n := take(&b, s)
			for i := 0; i < n; i++ {
				codes = append(codes, s.body)
			}
			counts = append(counts, fmt.Sprintf("%d×%dB %s", n, len(s.body), s.name))
		}
		filler := take(&b, shape{"straight", straight, nil})
		for i := 0; i < filler; i++ {
			codes = append(codes, straight)
		}
		wasm := module(types, codes...)
		if _, err := Check(wasm, l); err != nil {
			tb.Fatalf("%s: the module is over the limits: %v", name, err)
		}
		st, _ := Measure(wasm)
		out = append(out, worst{
			name: fmt.Sprintf("%s: %s + %d straight; units %d, work %.2g, locals work %.2g (max %.2g), accesses %d, nest %d, loops %d, br_table %d, locals %d",
				name, strings.Join(counts, " + "), filler, st.MaxFlowUnits, float64(st.FlowWork), float64(st.LocalsWork), float64(st.MaxLocalsWork),
				st.MemoryAccesses, st.MaxNesting, st.MaxLoops, st.MaxBrTableTargets, st.MaxLocals),
			wasm: wasm,
		})
	}
	for _, s := range shapes {
		if s.name == "straight" {
			build(s.name, nil)
			continue
		}
		build(s.name, s.types, s)
	}
	// Every budget spent at once: the flow units on brif, the accesses on
	// chained loads, the locals work on loops, the bytes on straight code.
	build("combo", nil, combo...)
	return out
}

// worstShape is a function body at the per-function limits.
type worstShape struct {
	name  string
	body  []byte
	types [][]byte // nil: i32i32 only
}

// worstModule is a module of the functions codes, of type 0 of types (nil:
// funcsModule's).
func worstModule(types [][]byte, codes ...[]byte) []byte {
	if types == nil {
		return funcsModule(codes...)
	}
	g := gen{types: types, mems: [][]byte{{0x00, 0x01}}, codes: codes}
	for range codes {
		g.funcs = append(g.funcs, 0)
	}
	return g.bytes()
}

// worstFunctions are one function of each shape alone: what one
// compilation worker may be inside when a load's deadline passes.
func worstFunctions(tb testing.TB, l Limits) []worst {
	shapes, _ := worstShapes(tb, l.withDefaults())
	var out []worst
	for _, s := range shapes {
		wasm := worstModule(s.types, s.body)
		st, err := Measure(wasm)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, worst{
			name: fmt.Sprintf("one %s: %dB; units %d, work %.2g, locals work %.2g, accesses %d, insts %d, locals %d",
				s.name, len(s.body), st.MaxFlowUnits, float64(st.FlowWork), float64(st.LocalsWork), st.MemoryAccesses, st.MaxInstructions, st.MaxLocals),
			wasm: wasm,
		})
	}
	return out
}

// worstShapes are the shapes of worstModules (the first is the straight
// filler), and those of its combo module.
func worstShapes(tb testing.TB, l Limits) (shapes, combo []worstShape) {
	type shape = worstShape
	module := worstModule
	units := l.MaxFlowUnits - 8
	size := l.MaxFunctionBytes - 16
	// fitTypes shrinks a shape's size until one function is within l.
	fitTypes := func(name string, types [][]byte, gen func(size int) []byte, size int) shape {
		for {
			b := gen(size)
			if _, err := Check(module(types, b), l); err == nil || size < 2 {
				return shape{name, b, types}
			}
			size = size * 31 / 32
		}
	}
	fit := func(name string, gen func(size int) []byte, size int) shape { return fitTypes(name, nil, gen, size) }
	insts := l.MaxInstructions * 7 / 4
	// Straight-line code within MaxInstructions (filler: 2 bytes an
	// instruction).
	straight := fit("straight", shapeStraight, min(size, insts)).body
	memChain := fit("memory-chain", func(n int) []byte { return shapeLoadChain(n, false) }, min(size, insts*3/2))
	brif := fit("brif", func(n int) []byte { return shapeBrIf(2, n) }, min(size, 4*units))
	localsLoop := fit("locals-loop-20", func(n int) []byte { return shapeLocalsLoop(20, n) }, units)
	shapes = []shape{
		{"straight", straight, nil},
		fit("calls", shapeCalls, min(size, insts*6/3)),
		fit("memory", shapeMemory, min(size, insts*10/4)),
		memChain,
		fit("memory-chain-calls", func(n int) []byte { return shapeLoadChain(n, true) }, min(size, insts*3/2)),
		brif,
		fit("brif-redefine", func(n int) []byte { return shapeBrIfDef(2, n) }, min(size, 8*units)),
		fit("blockchain", shapeBlockChain, min(size, 5*units/2)),
		fit("nested-loops", func(n int) []byte { return shapeNested(n, min(size, insts), true) }, min(l.MaxLoops, l.MaxNesting-2, units/5)),
		fit("nested-blocks", func(n int) []byte { return shapeNested(n, min(size, insts), false) }, min(l.MaxNesting-2, units/3)),
		fit("brtable", func(n int) []byte { return shapeBrTable(4, l.MaxBrTableTargets, n) }, min(size, (units/(2+l.MaxBrTableTargets/brTableTargetsPerUnit))*(l.MaxBrTableTargets*2))),
		fit("loops", func(n int) []byte { return shapeLoops(min(l.MaxLoops, units/5), n) }, min(size, insts)),
		fit("locals", func(n int) []byte { return shapeLocals(n, min(l.MaxLoops, 100), min(size, insts)) }, l.MaxLocals),
		// The locals work (flow.go), each shape at MaxLocalsWork: the most
		// locals that fit, or the most joins, walks or reads for a number
		// of locals.
		fit("locals-arith", func(n int) []byte { return shapeLocalsArith(n, size*3/4) }, l.MaxLocals),
		fit("locals-joins-30", func(n int) []byte { return shapeLocalsJoins(30, n) }, units),
		fit("locals-joins-300", func(n int) []byte { return shapeLocalsJoins(300, n) }, units),
		fit("locals-loop-1", func(n int) []byte { return shapeLocalsLoop(1, n) }, units),
		localsLoop,
		fit("locals-loop-100", func(n int) []byte { return shapeLocalsLoop(100, n) }, units),
		fit("locals-chain-8", func(n int) []byte { return shapeLocalsChain(8, n, 8) }, units),
		fit("locals-brtable-8", func(n int) []byte { return shapeLocalsBrTable(8, l.MaxBrTableTargets, n) }, units),
		fit("locals-calls-100", func(n int) []byte { return shapeLocalsCalls(100, n) }, insts/26),
		fitTypes("locals-arity-100", arityTypes(100), func(n int) []byte { return shapeArity(100, n) }, units),
		// Many small and medium functions of locals work.
		fit("locals-small", func(n int) []byte { return shapeLocalsJoins(16, n) }, 16),
		fit("locals-medium", func(n int) []byte { return shapeLocalsJoins(100, n) }, 60),
		{"bulk-small", shapeBulk(900), nil},
		{"divs-small", shapeDivs(150), nil},
		{"tiny-functions", body(nil, finish(nil)), nil},
		{"tiny-loops", shapeTinyLoops(4), nil},
	}
	return shapes, []worstShape{brif, memChain, localsLoop}
}

// TestWorstCase compiles the worst modules within DefaultLimits on each
// engine (wazero; wasmtime under the wasmtime build tag), plain and
// instrumented as the engines instrument them, each in a process of its
// own to measure its peak RSS. It takes minutes:
//
//	WASMPROV_PRECHECK_WORSTCASE=1 go test -run WorstCase -v -timeout 2h ./runtime/internal/precheck
//	WASMPROV_PRECHECK_WORSTCASE=1 CGO_ENABLED=1 go test -tags wasmtime -run WorstCase -v -timeout 2h ./runtime/internal/precheck
//
// WASMPROV_PRECHECK_WORSTCASE may instead list shapes (comma-separated
// prefixes of their names); WASMPROV_PRECHECK_ENGINES the engines;
// WASMPROV_PRECHECK_MODES "plain" or "instrumented" only;
// WASMPROV_PRECHECK_REAL=1 adds the largest real guest;
// WASMPROV_PRECHECK_CHILD_TIMEOUT the seconds a compile may take before
// it is killed (default 600).
// WASMPROV_PRECHECK_ONE=1 compiles one function of each shape instead, what
// a compilation worker may be inside when a load's deadline passes.
// Each compile must take less than WASMPROV_PRECHECK_MAXSECONDS of CPU
// (default 30 s; one function, oneFunctionCPU).
func TestWorstCase(t *testing.T) {
	sel := os.Getenv("WASMPROV_PRECHECK_WORSTCASE")
	if sel == "" {
		t.Skip("set WASMPROV_PRECHECK_WORSTCASE=1 (slow: it compiles modules at every limit)")
	}
	limit := 30 * time.Second
	if s := os.Getenv("WASMPROV_PRECHECK_MAXSECONDS"); s != "" {
		d, err := time.ParseDuration(s + "s")
		if err != nil {
			t.Fatal(err)
		}
		limit = d
	}
	engines := []string{"wazero", "wasmtime"}
	if e := os.Getenv("WASMPROV_PRECHECK_ENGINES"); e != "" {
		engines = strings.Split(e, ",")
	}
	modes := []bool{false, true}
	switch os.Getenv("WASMPROV_PRECHECK_MODES") {
	case "plain":
		modes = []bool{false}
	case "instrumented":
		modes = []bool{true}
	}
	dir := t.TempDir()
	var modules []worst
	if os.Getenv("WASMPROV_PRECHECK_ONE") != "" {
		modules = worstFunctions(t, Limits{})
		if os.Getenv("WASMPROV_PRECHECK_MAXSECONDS") == "" {
			limit = oneFunctionCPU
		}
	} else {
		modules = worstModules(t, Limits{})
	}
	if os.Getenv("WASMPROV_PRECHECK_REAL") != "" {
		// The largest real guest, for reference.
		g := realGuests(t)
		big := g[0]
		for _, r := range g {
			if len(r.wasm) > len(big.wasm) {
				big = r
			}
		}
		modules = append([]worst{{name: "real: " + big.name, wasm: big.wasm}}, modules...)
	}
	for _, w := range modules {
		if sel != "1" && !hasPrefix(w.name, strings.Split(sel, ",")) {
			continue
		}
		file := filepath.Join(dir, "m.wasm")
		if err := os.WriteFile(file, w.wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, eng := range engines {
			if compilers[eng] == nil {
				continue
			}
			for _, instr := range modes {
				d, cpu, compileCPU, rss, out, err := compileInChild(file, eng, instr)
				mode := "plain"
				if instr {
					mode = "instrumented"
				}
				note := ""
				if instr && err == nil {
					note = out + "; "
				}
				t.Logf("%-8s %-12s %6.2fs wall %6.2fs compile cpu %6.2fs process cpu %5d MiB  %s%s (%d bytes)",
					eng, mode, d.Seconds(), compileCPU.Seconds(), cpu.Seconds(), rss>>20, note, w.name, len(w.wasm))
				if err != nil {
					t.Errorf("%s %s %s: %v\n%s", eng, mode, w.name, err, out)
				} else if compileCPU > limit {
					t.Errorf("%s %s %s: compiled in %v of CPU, more than %v", eng, mode, w.name, compileCPU, limit)
				}
			}
		}
	}
}

// oneFunctionCPU bounds the CPU time of one function's compile
// (WASMPROV_PRECHECK_ONE).
const oneFunctionCPU = time.Second

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// compileInChild compiles file in a child test process and returns the
// compile time it reports, its CPU time (user and system, the whole
// process: reading the module, instrumenting, compiling), the CPU time of
// the compile alone (every thread of the child's, RUSAGE_SELF) and its peak
// RSS.
func compileInChild(file, eng string, instr bool) (time.Duration, time.Duration, time.Duration, int64, string, error) {
	timeout := 10 * time.Minute
	if s := os.Getenv("WASMPROV_PRECHECK_CHILD_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s + "s"); err == nil {
			timeout = d
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWorstCaseChild$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("WASMPROV_PRECHECK_CHILD=%s|%s|%v", file, eng, instr))
	out, err := cmd.CombinedOutput()
	// The child's CPU time from its rusage; its peak RSS from its own
	// VmHWM (the rusage's maxrss would start from the parent's RSS at
	// the fork).
	var rss int64
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if err != nil {
		return 0, cpu, 0, rss, string(out), err
	}
	var ns, ins, cns int64
	for _, line := range strings.Split(string(out), "\n") {
		fmt.Sscanf(strings.TrimSpace(line), "instrument_ns=%d", &ins)
		fmt.Sscanf(strings.TrimSpace(line), "compile_cpu_ns=%d", &cns)
		if _, e := fmt.Sscanf(strings.TrimSpace(line), "rss_kb=%d", &rss); e == nil {
			rss <<= 10
		}
		if _, e := fmt.Sscanf(strings.TrimSpace(line), "compile_ns=%d", &ns); e == nil {
			return time.Duration(ns), cpu, time.Duration(cns), rss, fmt.Sprintf("instrumented in %v", time.Duration(ins)), nil
		}
	}
	return 0, cpu, 0, rss, string(out), fmt.Errorf("no compile time in the child's output")
}

// TestWorstCaseChild is the child of TestWorstCase.
func TestWorstCaseChild(t *testing.T) {
	spec := os.Getenv("WASMPROV_PRECHECK_CHILD")
	if spec == "" {
		t.Skip("run by TestWorstCase")
	}
	f := strings.Split(spec, "|")
	wasm, err := os.ReadFile(f[0])
	if err != nil {
		t.Fatal(err)
	}
	if f[2] == "true" {
		flag := interrupt.FlagBudget // the wazero engine's
		if f[1] == "wasmtime" {
			flag = interrupt.FlagMemory
		}
		start := time.Now()
		if wasm, err = interrupt.InstrumentWith(wasm, flag); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("instrument_ns=%d\n", time.Since(start).Nanoseconds())
	}
	cpu0 := cpuTime()
	d, err := compilers[f[1]](wasm)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("compile_cpu_ns=%d\n", (cpuTime() - cpu0).Nanoseconds())
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				fmt.Printf("rss_kb=%s\n", strings.Fields(line)[1])
			}
		}
	}
	fmt.Printf("compile_ns=%d\n", d.Nanoseconds())
}
