package interrupt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmprov/wasmprov/internal/testing/race"
)

// ---- the stack bound (stack.go) ----

// watModule assembles wat with wat2wasm (tail calls on).
func watModule(tb testing.TB, wat string) []byte {
	tb.Helper()
	dir := tb.TempDir()
	src, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(src, []byte(wat), 0o644); err != nil {
		tb.Fatal(err)
	}
	if b, err := exec.Command(wabt(tb, "wat2wasm"), "--enable-tail-call", src, "-o", out).CombinedOutput(); err != nil {
		tb.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// stackInstance instantiates wasm in a new wazero runtime with tail calls
// and exception handling, and a yield function that does nothing.
func stackInstance(ctx context.Context, tb testing.TB, wasm []byte) api.Module {
	tb.Helper()
	cfg := wazero.NewRuntimeConfigCompiler().WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExceptionHandling)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	tb.Cleanup(func() { r.Close(ctx) })
	if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(func() {}).Export(YieldName).Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	m, err := r.Instantiate(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// stackCounter is an instance's stack counter.
func stackCounter(m api.Module) int32 { return int32(m.ExportedGlobal(StackName).Get()) }

// localsWat is a function $f (param i32) (result i64) with n i64 locals,
// all assigned, then live across its call of itself (with the parameter
// plus one; without end when limit is 0, else until it reaches limit),
// then summed: a frame of 8n bytes and more.
func localsWat(n, limit int) string {
	var b strings.Builder
	b.WriteString("(func $f (export \"run\") (param i32) (result i64)")
	fmt.Fprintf(&b, " (local")
	for range n {
		b.WriteString(" i64")
	}
	b.WriteString(")\n")
	for i := range n {
		fmt.Fprintf(&b, "(local.set %d (i64.add (i64.extend_i32_u (local.get 0)) (i64.const %d)))\n", i+1, i*7+1)
	}
	stop := "(i32.const 0)"
	if limit > 0 {
		stop = fmt.Sprintf("(i32.eq (local.get 0) (i32.const %d))", limit)
	}
	fmt.Fprintf(&b, "(if (result i64) %s (then (i64.const 0)) (else (call $f (i32.add (local.get 0) (i32.const 1)))))\n", stop)
	for i := range n {
		fmt.Fprintf(&b, "(local.get %d) i64.add\n", i+1)
	}
	b.WriteString(")")
	return b.String()
}

// paramsWat is a recursion of a function of n i64 parameters passed on.
func paramsWat(n int) string {
	var b strings.Builder
	b.WriteString("(func (export \"run\") (param i32) (result i32) (call $g (local.get 0)")
	for range n {
		b.WriteString(" (i64.const 1)")
	}
	b.WriteString("))\n(func $g (param i32)")
	for range n {
		b.WriteString(" (param i64)")
	}
	b.WriteString(" (result i32) (i32.add (i32.const 1) (call $g (i32.add (local.get 0) (i32.const 1))")
	for i := range n {
		fmt.Fprintf(&b, " (local.get %d)", i+1)
	}
	b.WriteString(")))")
	return b.String()
}

// stackBombs are recursions without end, each exported as run(0).
var stackBombs = map[string]string{
	// The lead's: a frame of a few bytes.
	"call": `(func $deep (export "run") (param i32) (result i32)
		(i32.add (call $deep (i32.add (local.get 0) (i32.const 1))) (i32.const 1)))`,
	"mutual": `(func $a (export "run") (param i32) (result i32) (i32.add (call $b (local.get 0)) (i32.const 1)))
		(func $b (param i32) (result i32) (i32.add (call $a (i32.add (local.get 0) (i32.const 1))) (i32.const 2)))`,
	"call_indirect": `(type $t (func (param i32) (result i32)))
		(table 1 funcref) (elem (i32.const 0) $f)
		(func $f (export "run") (param i32) (result i32)
			(i32.add (call_indirect (type $t) (i32.add (local.get 0) (i32.const 1)) (i32.const 0)) (i32.const 1)))`,
	// A tail call whose parameters do not fit in registers: a call in
	// wazero.
	"return_call stack arguments": `(func $f (export "run") (param i32) (result i32) (return_call $g (local.get 0)
			(i64.const 1) (i64.const 2) (i64.const 3) (i64.const 4) (i64.const 5) (i64.const 6) (i64.const 7)))
		(func $g (param i32 i64 i64 i64 i64 i64 i64 i64) (result i32)
			(return_call $g (i32.add (local.get 0) (i32.const 1))
				(local.get 1) (local.get 2) (local.get 3) (local.get 4) (local.get 5) (local.get 6) (local.get 7)))`,
	// Big frames: 10,000 live i64 locals (80 KB a frame in wazero), and
	// 1,000 parameters (25 KB). (40,000 locals, 320 KB, behave the same,
	// but take wazero over a minute to compile instrumented: its time
	// grows with the locals times the checks.)
	"10000 locals": localsWat(10_000, 0),
	"1000 params":  paramsWat(1000),
}

// TestStackBombsTrap: every recursion without end traps in FlagBudget
// mode, with the stack counter below zero (the host's sign that the stack
// bound stopped it).
func TestStackBombsTrap(t *testing.T) {
	ctx := context.Background()
	for _, name := range slices.Sorted(maps.Keys(stackBombs)) {
		t.Run(name, func(t *testing.T) {
			wasm, err := InstrumentWith(watModule(t, "(module "+stackBombs[name]+")"), FlagBudget)
			if err != nil {
				t.Fatal(err)
			}
			m := stackInstance(ctx, t, wasm)
			_, err = m.ExportedFunction("run").Call(ctx, 0)
			if err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("run: %v, want the unreachable trap", firstLine(err))
			}
			if c := stackCounter(m); c >= 0 {
				t.Fatalf("the stack counter is %d after the trap, want below 0", c)
			}
		})
	}
}

func firstLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// stackChildEnv selects TestStackBoundMemory's child: bomb name, then
// "bound" (FlagBudget) or "unbounded" (FlagBudget with a stack limit wazero
// reaches first: what the instrumentation did before the bound).
const stackChildEnv = "WASMPROV_INTERRUPT_STACK_CHILD"

// TestStackBoundMemory: a recursion bomb with small frames and ones with
// big frames (the one whose estimate is closest to wazero's frame among
// them) raise the memory of a process (VmHWM, its high-water mark, reset
// after compiling) by at most 1.5 x StackLimit (4.5 x under the race
// detector, whose shadow memory counts too) before they trap (the
// stack doubles as it grows, copying itself; the estimates are over the
// real frames). Each runs in a child process of its own. Without the bound
// (a limit above wazero's stack ceiling: what FlagBudget did before it)
// each raised it by 98-181 MiB (not -short: the test checks that it still
// does, or the measure would prove nothing).
func TestStackBoundMemory(t *testing.T) {
	if c := os.Getenv(stackChildEnv); c != "" {
		stackMemoryChild(t, c)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	modes := []string{"bound"}
	if !testing.Short() {
		modes = append(modes, "unbounded")
	}
	maxKiB := StackLimit * 3 / 2 >> 10
	if race.Enabled {
		// The race detector keeps shadow memory for every byte the
		// process writes, wazero's stack included, so a memory measure
		// reads about 2.5 times higher. Measured under -race: 6-118 MiB
		// bound, 247-411 MiB unbounded.
		maxKiB *= 3
	}
	for _, name := range []string{"call", "10000 locals", "1000 params", "reassigned between calls"} {
		for _, mode := range modes {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStackBoundMemory$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), stackChildEnv+"="+name+":"+mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: child: %v\n%s", name, mode, err, out)
			}
			var kib int
			for _, l := range strings.Split(string(out), "\n") {
				if i := strings.Index(l, "grew by "); i >= 0 {
					kib, _ = strconv.Atoi(strings.Fields(l[i+len("grew by "):])[0])
					t.Logf("%-24s %-9s %s", name, mode, l[strings.Index(l, "VmHWM"):])
				}
			}
			switch {
			case kib == 0:
				t.Fatalf("%s %s: no measure in the child's output:\n%s", name, mode, out)
			case mode == "bound" && kib > maxKiB:
				t.Errorf("%s: the process grew by %d KiB, want at most %d MiB", name, kib, maxKiB>>10)
			case mode == "unbounded" && kib < 64<<10:
				t.Errorf("%s without the bound: the process grew by %d KiB only: the measure is broken", name, kib)
			}
		}
	}
}

func stackMemoryChild(t *testing.T, c string) {
	name, mode, _ := strings.Cut(c, ":")
	limit := int32(StackLimit)
	if mode == "unbounded" {
		limit = 1<<31 - 1
	}
	ctx := context.Background()
	// A bomb runs from 0; a frame shape from -1, as deep as the stack
	// lets it.
	wat, arg := stackBombs[name], uint64(0)
	if wat == "" {
		wat, arg = frameShapes()[name], 1<<32-1
	}
	wasm, _, err := instrumentWith(watModule(t, "(module "+wat+")"), FlagBudget, options{budget: Budget, stack: limit})
	if err != nil {
		t.Fatal(err)
	}
	m := stackInstance(ctx, t, wasm)
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset VmHWM: %v", err)
	}
	before := procStatus(t, "VmHWM")
	_, err = m.ExportedFunction("run").Call(ctx, arg)
	after := procStatus(t, "VmHWM")
	t.Logf("VmHWM grew by %d KiB (%d -> %d KiB): %s", after-before, before, after, firstLine(err))
	if err == nil {
		t.Fatal("the bomb returned")
	}
}

// procStatus is a field of /proc/self/status, in kB.
func procStatus(tb testing.TB, key string) int {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no %s in /proc/self/status", key)
	return 0
}

// TestStackDeepLegal: a recursion as deep as the bound allows returns the
// right result, one frame deeper traps: rec(n) takes n counted frames
// (rec(0) calls nothing, and is not counted), and traps at the first
// check of the one that takes the counter below 0. The same for mutual
// recursion, for call_indirect, and for a frame of 10,000 live locals
// (whose checks before its recursive call are on every path: each frame,
// the last too, tests the counter).
// After a call that returned, the counter is back at StackLimit.
func TestStackDeepLegal(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		wat   string
		frame func(frames []int32) int64 // the bytes a frame of the recursion takes
		want  func(n uint64) uint64      // run(n)
	}{
		"call": {`(func $rec (export "run") (param i32) (result i32)
			(if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
				(else (i32.add (call $rec (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))`,
			func(f []int32) int64 { return int64(f[0]) }, func(n uint64) uint64 { return n }},
		// a(n) = b(n-1) + 1, b(n) = a(n-1) + 2: frames alternate.
		"mutual": {`(func $a (export "run") (param i32) (result i32)
			(if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
				(else (i32.add (call $b (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))
			(func $b (param i32) (result i32)
			(if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
				(else (i32.add (call $a (i32.sub (local.get 0) (i32.const 1))) (i32.const 2)))))`,
			nil, func(n uint64) uint64 { return n/2*3 + n%2 }},
		"call_indirect": {`(type $t (func (param i32) (result i32)))
			(table 1 funcref) (elem (i32.const 0) $rec)
			(func $rec (export "run") (param i32) (result i32)
			(if (result i32) (i32.eqz (local.get 0)) (then (i32.const 0))
				(else (i32.add (call_indirect (type $t) (i32.sub (local.get 0) (i32.const 1)) (i32.const 0)) (i32.const 1)))))`,
			func(f []int32) int64 { return int64(f[0]) }, func(n uint64) uint64 { return n }},
	} {
		t.Run(name, func(t *testing.T) {
			orig := watModule(t, "(module "+c.wat+")")
			wasm, rep, err := instrumentWith(orig, FlagBudget, options{budget: Budget, stack: StackLimit})
			if err != nil {
				t.Fatal(err)
			}
			// The deepest n whose counted frames fit.
			var deepest uint64
			if c.frame != nil {
				deepest = uint64(StackLimit / c.frame(rep.frames))
			} else {
				sum := int64(0)
				for n := 0; ; n++ {
					if sum += int64(rep.frames[n%2]); sum > StackLimit {
						deepest = uint64(n)
						break
					}
				}
			}
			m := stackInstance(ctx, t, wasm)
			run := m.ExportedFunction("run")
			for _, n := range []uint64{0, 1, 2, 100, deepest} {
				res, err := run.Call(ctx, n)
				if err != nil || res[0] != c.want(n) {
					t.Fatalf("run(%d) = %v, %v; want %d", n, res, firstLine(err), c.want(n))
				}
				if got := stackCounter(m); got != StackLimit {
					t.Fatalf("after run(%d) the counter is %d, want %d", n, got, StackLimit)
				}
			}
			if _, err := run.Call(ctx, deepest+1); err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("run(%d): %v, want the unreachable trap", deepest+1, firstLine(err))
			}
			t.Logf("frames of %v bytes: %d deep", rep.frames, deepest)
			// The original computes the same as deep, and deeper.
			o := stackInstance(ctx, t, orig)
			if res, err := o.ExportedFunction("run").Call(ctx, deepest+1); err != nil || res[0] != c.want(deepest+1) {
				t.Fatalf("the original: run(%d) = %v, %v", deepest+1, res, err)
			}
		})
	}
	// 10,000 locals: frames of 80 KB (estimated ~330 KB).
	orig := watModule(t, "(module "+localsWat(10_000, 1<<30)+")")
	wasm, rep, err := instrumentWith(orig, FlagBudget, options{budget: Budget, stack: StackLimit})
	if err != nil {
		t.Fatal(err)
	}
	deepest := uint64(StackLimit/rep.frames[0]) - 1
	o, m := stackInstance(ctx, t, orig), stackInstance(ctx, t, wasm)
	for _, n := range []uint64{0, deepest} {
		// run(k) recurses until its parameter reaches 1<<30: start there.
		want, err := o.ExportedFunction("run").Call(ctx, 1<<30-n)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.ExportedFunction("run").Call(ctx, 1<<30-n); err != nil || got[0] != want[0] {
			t.Fatalf("10000 locals, %d deep: %v, %v; want %v", n, got, firstLine(err), want)
		}
	}
	if _, err := m.ExportedFunction("run").Call(ctx, 1<<30-deepest-1); err == nil {
		t.Fatalf("10000 locals, %d deep: no trap", deepest+1)
	}
	t.Logf("10000 locals: frames of %d bytes: %d deep", rep.frames[0], deepest)
}

// TestStackTailCalls: a tail call that wazero makes a jump is not counted
// (a chain of ten million returns), one that it makes a call is (it
// becomes call then return) and computes the same; the counter is back
// at StackLimit after each.
func TestStackTailCalls(t *testing.T) {
	ctx := context.Background()
	wat := `(module
		(func $jump (export "jump") (param i32) (result i32)
			(if (result i32) (local.get 0) (then (return_call $jump (i32.sub (local.get 0) (i32.const 1)))) (else (i32.const 7))))
		(func (export "call") (param i32) (result i64)
			(return_call $g (local.get 0) (i64.const 1) (i64.const 2) (i64.const 3) (i64.const 4) (i64.const 5) (i64.const 6) (i64.const 7)))
		(func $g (param i32 i64 i64 i64 i64 i64 i64 i64) (result i64)
			(if (result i64) (i32.eqz (local.get 0))
				(then (i64.add (local.get 1) (i64.add (local.get 4) (local.get 7))))
				(else (return_call $g (i32.sub (local.get 0) (i32.const 1))
					(local.get 2) (local.get 3) (local.get 4) (local.get 5) (local.get 6) (local.get 7) (local.get 1))))))`
	orig := watModule(t, wat)
	wasm, rep, err := instrumentWith(orig, FlagBudget, options{budget: Budget, stack: StackLimit})
	if err != nil {
		t.Fatal(err)
	}
	if rep.frames[0] != -1 || rep.frames[1] < 0 || rep.frames[2] < 0 {
		t.Fatalf("frames %v: want jump not counted, the others counted", rep.frames)
	}
	o, m := stackInstance(ctx, t, orig), stackInstance(ctx, t, wasm)
	for _, c := range []struct {
		f string
		n uint64
	}{{"jump", 10_000_000}, {"call", 0}, {"call", 1}, {"call", 1000}} {
		want, err := o.ExportedFunction(c.f).Call(ctx, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.ExportedFunction(c.f).Call(ctx, c.n)
		if err != nil || got[0] != want[0] {
			t.Fatalf("%s(%d) = %v, %v; want %v", c.f, c.n, got, firstLine(err), want)
		}
		if s := stackCounter(m); s != StackLimit {
			t.Fatalf("after %s(%d) the counter is %d", c.f, c.n, s)
		}
	}
	// Inside a try block, where a call's exceptions would be caught, a
	// tail call on wazero's stack is refused.
	// (func (try_table (return_call 1 (i32.const 0) (i64.const 0) x 7))) (func (param i32 i64 x 7))
	body := cat([]byte{0, 0x1f, 0x40, 0}, i32c(0), repeat(7, i64c(0)), []byte{0x12, 1, 0x0b, 0x0b})
	try := mod(sec(1, 2, 0x60, 0, 0, 0x60, 8, 0x7f, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0), sec(3, 2, 0, 1),
		sec(10, cat([]byte{2}, u(uint64(len(body))), body, []byte{2, 0, 0x0b})...))
	if _, err := InstrumentWith(try, FlagBudget); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "try block") {
		t.Fatalf("a tail call with stack arguments in a try_table: %v", err)
	}
}

// throwsAcross is a module whose run(n) makes n rounds of three throws,
// each through two counted frames (mid calls thrower, which calls a leaf
// and throws), caught by a try_table whose catch_all lands at the end of
// a block (in run), at a function's label (in toFunc) and at a loop's
// header (in toLoop, three times); it returns n.
func throwsAcross() []byte {
	types := []byte{2, 0x60, 0, 0, 0x60, 1, 0x7f, 1, 0x7f}
	tryCatch := func(label byte, body ...byte) []byte { // try_table (catch_all label) body end
		return cat([]byte{0x1f, 0x40, 1, 0x02, label}, body, opEnd)
	}
	run := cat(
		opBlock, opLoop,
		localGet(0), opEqz32, brIf(1),
		localGet(0), i32c(1), opSub32, localSet(0),
		opBlock, tryCatch(0, call(1)...), opEnd,
		call(4), call(5),
		localGet(1), i32c(1), []byte{0x6a}, localSet(1),
		br(0), opEnd, opEnd,
		localGet(1))
	toLoop := cat(i32c(3), localSet(0), opLoop,
		localGet(0), opEqz32, brIf(1),
		localGet(0), i32c(1), opSub32, localSet(0),
		tryCatch(0, call(1)...), opEnd)
	funcs := []struct {
		typ    byte
		locals []byte
		code   []byte
	}{
		{1, []byte{1, 1, 0x7f}, run},
		{0, []byte{0}, call(2)},                    // mid
		{0, []byte{0}, cat(call(3), []byte{8, 0})}, // thrower: throw 0
		{0, []byte{0}, nil},                        // leaf
		{0, []byte{0}, tryCatch(0, call(1)...)},    // toFunc
		{0, []byte{1, 1, 0x7f}, toLoop},            // toLoop
	}
	fs := []byte{byte(len(funcs))}
	code := []byte{byte(len(funcs))}
	for _, f := range funcs {
		fs = append(fs, f.typ)
		body := cat(f.locals, f.code, opEnd)
		code = append(append(code, u(uint64(len(body)))...), body...)
	}
	return mod(sec(1, types...), sec(3, fs...), sec(13, 1, 0, 0), sec(7, 1, 3, 'r', 'u', 'n', 0x00, 0), sec(10, code...))
}

// TestStackCounterRestored: after a call that returns, the counter is
// back at its limit, whatever way its functions left: every exit form,
// and exceptions that unwind counted frames (each landing sets the
// counter back, or the 2,000 frames that run(200) unwinds would take it
// below 0: the limit here is 64 KiB; a throw takes wazero ~0.5 ms).
func TestStackCounterRestored(t *testing.T) {
	ctx := context.Background()
	const limit = 64 << 10
	for name, c := range map[string]struct {
		wasm []byte
		ns   []uint64
	}{
		"exit forms": {exitForms(), []uint64{0, 1, 4, 7}},
		"exceptions": {exceptions(), []uint64{0, 1, 100}},
		"throws":     {throwsAcross(), []uint64{0, 1, 200}},
	} {
		t.Run(name, func(t *testing.T) {
			wasm, rep, err := instrumentWith(c.wasm, FlagBudget, options{budget: Budget, stack: limit})
			if err != nil {
				t.Fatal(err)
			}
			o, m := stackInstance(ctx, t, c.wasm), stackInstance(ctx, t, wasm)
			for _, n := range c.ns {
				want, err := o.ExportedFunction("run").Call(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.ExportedFunction("run").Call(ctx, n)
				if err != nil || got[0] != want[0] {
					t.Fatalf("run(%d) = %v, %v; want %v", n, got, firstLine(err), want)
				}
				if s := stackCounter(m); s != limit {
					t.Fatalf("after run(%d) the counter is %d, want %d (frames %v)", n, s, limit, rep.frames)
				}
			}
		})
	}
}

// TestGoGuestStackHeadroom: the Go guest computes the same with a quarter
// of the stack bound: the bound is at least 4 times what it needs.
func TestGoGuestStackHeadroom(t *testing.T) {
	ctx := context.Background()
	wasm := goGuest(t)
	orig := goGuestModule(ctx, t, wasm, false, func() {})
	small, _, err := instrumentWith(wasm, FlagBudget, options{budget: Budget, stack: StackLimit / 4})
	if err != nil {
		t.Fatal(err)
	}
	inst := goGuestModule(ctx, t, small, false, func() {})
	for _, n := range []uint64{0, 1, 7, 200} {
		want, err := orig.ExportedFunction("work").Call(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inst.ExportedFunction("work").Call(ctx, n)
		if err != nil || got[0] != want[0] {
			t.Fatalf("work(%d) with a quarter of the bound = %v, %v; want %v", n, got, firstLine(err), want)
		}
	}
}

// ---- the frame estimate against wazero's frames ----

// wazeroFrames compiles wasm with wazero's compiler and returns each
// defined function's stack requirement: what its prologue checks the
// stack for (frame, spill slots, callee-saved registers, its calls'
// arguments on the stack, and 32 bytes), read from the machine code in
// wazero's file cache. It skips the test where it cannot (not amd64, or
// wazero's cache or prologue no longer as v1.12.0 makes them).
func wazeroFrames(tb testing.TB, wasm []byte) []int {
	tb.Helper()
	if runtime.GOARCH != "amd64" {
		tb.Skip("reads amd64 prologues")
	}
	ctx := context.Background()
	dir := tb.TempDir()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache).
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExceptionHandling)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, wasm); err != nil {
		tb.Fatal(err)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		tb.Skipf("wazero's cache holds %d files", len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		tb.Fatal(err)
	}
	// "WAZEVO", version (length, bytes), function count (u32), their
	// offsets in the code (u64 each), the code's length (u64), the code.
	if len(b) < 7 || string(b[:6]) != "WAZEVO" {
		tb.Skip("not wazero v1.12.0's cache format")
	}
	pos := 7 + int(b[6])
	n := int(binary.LittleEndian.Uint32(b[pos:]))
	pos += 4
	offsets := make([]int, n)
	for i := range offsets {
		offsets[i] = int(binary.LittleEndian.Uint64(b[pos:]))
		pos += 8
	}
	code := b[pos+8 : pos+8+int(binary.LittleEndian.Uint64(b[pos:]))]
	out := make([]int, n)
	for i, o := range offsets {
		// push %rbp; mov %rsp, %rbp; sub $required, %rsp (imm32 or imm8)
		c := code[o:]
		switch {
		case len(c) >= 11 && string(c[:7]) == "\x55\x48\x89\xe5\x48\x81\xec":
			out[i] = int(binary.LittleEndian.Uint32(c[7:]))
		case len(c) >= 8 && string(c[:7]) == "\x55\x48\x89\xe5\x48\x83\xec":
			out[i] = int(c[7])
		default:
			tb.Skipf("function %d: not wazero v1.12.0's prologue: % x", i, c[:min(len(c), 12)])
		}
	}
	return out
}

// frameShapes are functions built for big frames in wazero, each a
// recursion (so that it calls): many live locals, parameters, operands;
// values reassigned between many calls (every one gets a spill slot of
// its own); values that outnumber the registers without a call; locals
// assigned in nested loops with calls between them (a value at every loop
// header for every local).
func frameShapes() map[string]string {
	leaf := `(func $leaf (param i64) (result i64) (local.get 0))`
	recurse := func(params string) string {
		return fmt.Sprintf(`(if (result i64) (i32.eqz (local.get 0)) (then (i64.const 0)) (else (call $f (i32.sub (local.get 0) (i32.const 1))%s)))`, params)
	}
	out := map[string]string{
		"locals 1000": localsWat(1000, 0),
		"params 100":  paramsWat(100),
	}
	var b strings.Builder
	b.WriteString(`(func $f (export "run") (param i32) (result i64)` + "\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "(i64.add (i64.extend_i32_u (local.get 0)) (i64.const %d))\n", i)
	}
	b.WriteString(recurse("") + strings.Repeat(" i64.add", 1000) + ")")
	out["operands 1000"] = b.String()

	b.Reset()
	b.WriteString(leaf + `(func $f (export "run") (param i32) (result i64) (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)` + "\n")
	for range 300 {
		for j := 1; j <= 10; j++ {
			fmt.Fprintf(&b, "(local.set %d (i64.mul (local.get %d) (local.get %d)))\n", j, j, j%10+1)
		}
		b.WriteString("(drop (call $leaf (i64.const 1)))\n")
	}
	b.WriteString(recurse(""))
	for j := 1; j <= 10; j++ {
		fmt.Fprintf(&b, " (local.get %d) i64.add", j)
	}
	out["reassigned between calls"] = b.String() + ")"

	b.Reset()
	b.WriteString(`(func $f (export "run") (param i32) (result i64) (local $x i64) (local.set $x (i64.extend_i32_u (local.get 0)))` + "\n")
	for i := range 300 {
		for j := range 20 {
			fmt.Fprintf(&b, "(i64.mul (local.get $x) (i64.const %d))\n", i*20+j+3)
		}
		b.WriteString(strings.Repeat(" i64.xor", 19) + " (local.set $x)\n")
	}
	out["register pressure"] = b.String() + recurse("") + " (local.get $x) i64.add)"

	b.Reset()
	const locals, loops = 60, 60
	b.WriteString(leaf + `(func $f (export "run") (param i32) (result i64)` + strings.Repeat(" (local i64)", locals) + " (local $c i32)\n")
	for j := range loops {
		fmt.Fprintf(&b, "(drop (call $leaf (i64.const %d))) loop\n", j)
	}
	for i := 1; i <= locals; i++ {
		fmt.Fprintf(&b, "(local.set %d (i64.add (local.get %d) (i64.const %d)))\n", i, i, i)
	}
	for range loops {
		fmt.Fprintf(&b, "(br_if 0 (i32.lt_u (local.tee %d (i32.add (local.get %d) (i32.const 1))) (i32.const 2))) end\n", locals+1, locals+1)
	}
	b.WriteString(recurse(""))
	for j := 1; j <= locals; j++ {
		fmt.Fprintf(&b, " (local.get %d) i64.add", j)
	}
	out["locals in nested loops"] = b.String() + ")"
	return out
}

// TestStackFrameEstimate: the frame estimate of every function that calls
// is over the stack wazero's compiler gives it, for the Go guest (whose
// frames are small: the estimate is 4 to 1000 times over) and for every
// function built for a big frame (the estimate within 2 to 5 times; for
// locals in nested loops, within 5%).
func TestStackFrameEstimate(t *testing.T) {
	check := func(t *testing.T, wasm []byte) {
		real := wazeroFrames(t, wasm)
		_, rep, err := instrumentWith(wasm, FlagBudget, options{budget: Budget, stack: StackLimit})
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := 1e9, 0.0
		for i, e := range rep.frames {
			if e < 0 {
				continue
			}
			// A frame takes what its prologue checks for, but for the 16
			// bytes of slack the check keeps.
			used := real[i] - 16
			if int(e) < used {
				t.Errorf("function %d: estimate %d, wazero's frame %d", i, e, used)
			}
			r := float64(e) / float64(used)
			lo, hi = min(lo, r), max(hi, r)
			if testing.Verbose() && len(rep.frames) < 10 {
				t.Logf("function %d: estimate %d, wazero's frame %d", i, e, used)
			}
		}
		t.Logf("estimates %.1f to %.1f times wazero's frames", lo, hi)
	}
	t.Run("Go guest", func(t *testing.T) { check(t, goGuest(t)) })
	shapes := frameShapes()
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		t.Run(name, func(t *testing.T) { check(t, watModule(t, "(module "+shapes[name]+")")) })
	}
}

// TestStackFrameEstimateBulk: a counted function whose bulk memory
// instructions are split (bulk.go) calls their helpers, which makes wazero
// keep its values across those calls: the estimate is still over the frame
// wazero gives the instrumented function, with ten locals reassigned
// between 300 copies and fills (as "reassigned between calls" does between
// calls); and a helper's own frame, which the counter does not take
// (stack.go), is small.
func TestStackFrameEstimateBulk(t *testing.T) {
	var b strings.Builder
	b.WriteString(`(memory 1) (func $f (export "run") (param i32) (result i64) (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)` + "\n")
	for i := range 300 {
		for j := 1; j <= 10; j++ {
			fmt.Fprintf(&b, "(local.set %d (i64.mul (local.get %d) (local.get %d)))\n", j, j, j%10+1)
		}
		if i%2 == 0 {
			b.WriteString("(memory.copy (i32.const 0) (i32.const 8) (i32.wrap_i64 (local.get 1)))\n")
		} else {
			b.WriteString("(memory.fill (i32.const 0) (i32.wrap_i64 (local.get 2)) (i32.wrap_i64 (local.get 3)))\n")
		}
	}
	b.WriteString(`(if (result i64) (i32.eqz (local.get 0)) (then (i64.const 0)) (else (call $f (i32.sub (local.get 0) (i32.const 1)))))`)
	for j := 1; j <= 10; j++ {
		fmt.Fprintf(&b, " (local.get %d) i64.add", j)
	}
	wasm := watModule(t, "(module "+b.String()+"))")
	out, rep, err := instrumentWith(wasm, FlagBudget, options{budget: Budget, stack: StackLimit})
	if err != nil {
		t.Fatal(err)
	}
	if n := helperCount(t, wasm, out); n != 2 {
		t.Fatalf("%d helpers, want 2", n)
	}
	real := wazeroFrames(t, out) // the defined functions, then the helpers
	if len(real) != len(rep.frames)+2 {
		t.Fatalf("%d compiled functions, want %d", len(real), len(rep.frames)+2)
	}
	for i, e := range rep.frames {
		if used := real[i] - 16; e < 0 || int(e) < used {
			t.Errorf("function %d: estimate %d, wazero's frame of the instrumented function %d", i, e, used)
		} else {
			t.Logf("function %d: estimate %d, wazero's frame %d (%.1f times)", i, e, used, float64(e)/float64(used))
		}
	}
	for _, f := range real[len(rep.frames):] {
		if f > 1024 { // 304 and 336 bytes with wazero v1.12.0
			t.Errorf("a helper's frame is %d bytes", f)
		}
		t.Logf("helper frame %d bytes", f)
	}
}
