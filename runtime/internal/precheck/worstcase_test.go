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
// the shape stresses) as MaxFunctions, MaxFlowWork and MaxModuleBytes
// allow, and the rest of the module's bytes in straight-line functions of
// MaxFunctionBytes, the most expensive code per byte that has no control
// flow.
func worstModules(tb testing.TB, l Limits) []worst {
	l = l.withDefaults()
	units := l.MaxFlowUnits - 8
	size := l.MaxFunctionBytes - 16
	// Straight-line code within MaxInstructions (filler: 2 bytes an
	// instruction).
	var straight []byte
	type shape struct {
		name string
		body []byte
	}
	// fit shrinks a shape's size until one function is within l.
	fit := func(name string, gen func(size int) []byte, size int) shape {
		for {
			b := gen(size)
			if _, err := Check(funcsModule(b), l); err == nil || size < 1024 {
				return shape{name, b}
			}
			size = size * 31 / 32
		}
	}
	insts := l.MaxInstructions * 7 / 4
	straight = fit("straight", shapeStraight, min(size, insts)).body
	shapes := []shape{
		{"straight", straight},
		fit("calls", shapeCalls, min(size, insts*6/3)),
		fit("memory", shapeMemory, min(size, insts*10/4)),
		fit("brif", func(n int) []byte { return shapeBrIf(2, n) }, min(size, 4*units)),
		fit("brif-redefine", func(n int) []byte { return shapeBrIfDef(2, n) }, min(size, 8*units)),
		fit("blockchain", shapeBlockChain, min(size, 5*units/2)),
		fit("nested-loops", func(n int) []byte { return shapeNested(min(l.MaxLoops, l.MaxNesting-2, units/5), n, true) }, min(size, insts)),
		fit("nested-blocks", func(n int) []byte { return shapeNested(min(l.MaxNesting-2, units/3), n, false) }, min(size, insts)),
		fit("brtable", func(n int) []byte { return shapeBrTable(4, l.MaxBrTableTargets, n) }, min(size, (units/(2+l.MaxBrTableTargets/brTableTargetsPerUnit))*(l.MaxBrTableTargets*2))),
		fit("loops", func(n int) []byte { return shapeLoops(min(l.MaxLoops, units/5), n) }, min(size, insts)),
		fit("locals", func(n int) []byte { return shapeLocals(l.MaxLocals, min(l.MaxLoops, 100), n) }, min(size, insts)),
		fit("bulk", shapeBulk, min(size, insts*9/4)),
		{"bulk-small", shapeBulk(900)},
		{"divs-small", shapeDivs(150)},
		{"tiny-functions", body(nil, finish(nil))},
		{"tiny-loops", shapeTinyLoops(4)},
	}
	var out []worst
	for _, s := range shapes {
		one := funcsModule(s.body)
		st, err := Measure(one)
		if err != nil {
			tb.Fatalf("%s: %v", s.name, err)
		}
		if _, err := Check(one, l); err != nil {
			tb.Fatalf("%s: one function is over the limits: %v", s.name, err)
		}
		if s.name == "straight" {
			straight = s.body
		}
		n := l.MaxFunctions
		if w := st.FlowWork; w > 0 {
			n = min(n, l.MaxFlowWork/w)
		}
		if u := st.FlowUnits; u > 0 {
			n = min(n, (l.MaxModuleFlowUnits-2000)/u) // room for the straight filler
		}
		if b := st.BulkInstructions; b > 0 {
			n = min(n, l.MaxBulkInstructions/b)
		}
		n = min(n, (l.MaxModuleBytes-64)/len(s.body))
		codes := make([][]byte, 0, n)
		total := 0
		for i := 0; i < n; i++ {
			codes = append(codes, s.body)
			total += len(s.body)
		}
		heavy := len(codes)
		for len(codes) < l.MaxFunctions && total+len(straight)+64+6*len(codes) < l.MaxModuleBytes {
			codes = append(codes, straight)
			total += len(straight)
		}
		wasm := funcsModule(codes...)
		if _, err := Check(wasm, l); err != nil {
			tb.Fatalf("%s: the module is over the limits: %v", s.name, err)
		}
		st, _ = Measure(wasm)
		out = append(out, worst{
			name: fmt.Sprintf("%s: %d×%dB + %d straight; units %d, work %.2g, nest %d, loops %d, br_table %d, locals %d",
				s.name, heavy, len(s.body), len(codes)-heavy, st.MaxFlowUnits, float64(st.FlowWork), st.MaxNesting,
				st.MaxLoops, st.MaxBrTableTargets, st.MaxLocals),
			wasm: wasm,
		})
	}
	return out
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
// Each compile must take less than WASMPROV_PRECHECK_MAXSECONDS (default
// 30) seconds.
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
	modules := worstModules(t, Limits{})
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
				d, cpu, rss, out, err := compileInChild(file, eng, instr)
				mode := "plain"
				if instr {
					mode = "instrumented"
				}
				note := ""
				if instr && err == nil {
					note = out + "; "
				}
				t.Logf("%-8s %-12s %6.2fs wall %6.2fs cpu %5d MiB  %s%s (%d bytes)", eng, mode, d.Seconds(), cpu.Seconds(), rss>>20, note, w.name, len(w.wasm))
				if err != nil {
					t.Errorf("%s %s %s: %v\n%s", eng, mode, w.name, err, out)
				} else if d > limit {
					t.Errorf("%s %s %s: compiled in %v, more than %v", eng, mode, w.name, d, limit)
				}
			}
		}
	}
}

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
// process: reading the module, instrumenting, compiling) and its peak
// RSS.
func compileInChild(file, eng string, instr bool) (time.Duration, time.Duration, int64, string, error) {
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
		return 0, cpu, rss, string(out), err
	}
	var ns, ins int64
	for _, line := range strings.Split(string(out), "\n") {
		fmt.Sscanf(strings.TrimSpace(line), "instrument_ns=%d", &ins)
		if _, e := fmt.Sscanf(strings.TrimSpace(line), "rss_kb=%d", &rss); e == nil {
			rss <<= 10
		}
		if _, e := fmt.Sscanf(strings.TrimSpace(line), "compile_ns=%d", &ns); e == nil {
			return time.Duration(ns), cpu, rss, fmt.Sprintf("instrumented in %v", time.Duration(ins)), nil
		}
	}
	return 0, cpu, rss, string(out), fmt.Errorf("no compile time in the child's output")
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
	d, err := compilers[f[1]](wasm)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				fmt.Printf("rss_kb=%s\n", strings.Fields(line)[1])
			}
		}
	}
	fmt.Printf("compile_ns=%d\n", d.Nanoseconds())
}
