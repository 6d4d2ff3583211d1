package interrupt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

func fixtures(tb testing.TB) map[string][]byte {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "malicious", "*.wasm"))
	if len(paths) == 0 {
		tb.Fatal("no fixtures")
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestInstrumentRefusesFlagAccess: a module that names the global index the
// budget would get is refused, not instrumented into resetting it, and an
// opcode the rewriter does not know is refused in both modes, not copied
// past the checks.
func TestInstrumentRefusesFlagAccess(t *testing.T) {
	// (module (func (global.set 0 (i32.const 0)))) — invalid as it stands
	// (no global 0), valid after a naive rewrite.
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		3, 2, 1, 0, // func 0: type 0
		10, 8, 1, 6, 0, 0x41, 0, 0x24, 0, 0x0b, // code: i32.const 0; global.set 0; end
	}
	if _, err := InstrumentWith(wasm, FlagBudget); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "global index 0") {
		t.Fatalf("want ErrUnsupported for global index 0, got %v", err)
	}
	// (func) of the unknown opcode 0xff, behind a type and function section.
	unknown := mod(sec(1, 1, 0x60, 0, 0), sec(3, 1, 0), sec(10, 1, 3, 0, 0xff, 0x0b))
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		if _, err := InstrumentWith(unknown, f); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "unknown opcode 0xff") {
			t.Fatalf("flag %d, unknown opcode: want ErrUnsupported, got %v", f, err)
		}
	}
}

// FuzzInstrument: InstrumentWith never panics, and whatever wazero accepts
// stays acceptable after instrumentation (or is refused with an error).
// FlagBudget accepts every module wazero compiles that imports nothing from
// YieldModule and does not export MemoryName or StackName, into a module
// wazero compiles, of the expected structure; FlagMemory every one that
// does not export MemoryName.
func FuzzInstrument(f *testing.F) {
	for _, b := range budgetFixtures(f) {
		f.Add(b)
	}
	for _, b := range shapeSeeds() {
		f.Add(b)
	}
	for _, b := range bulkSeeds() {
		f.Add(b)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		memOut, memErr := InstrumentWith(wasm, FlagMemory)
		if memErr != nil && !errors.Is(memErr, ErrUnsupported) {
			t.Fatalf("FlagMemory: an error that is not ErrUnsupported: %v", memErr)
		}
		budOut, budErr := InstrumentWith(wasm, FlagBudget)
		if budErr != nil && !errors.Is(budErr, ErrUnsupported) {
			t.Fatalf("FlagBudget: an error that is not ErrUnsupported: %v", budErr)
		}
		if memErr != nil && budErr != nil {
			return // not given to wazero, which panics on some invalid modules
		}
		orig, cerr := compileUntrusted(ctx, r, wasm)
		if cerr != nil {
			return
		}
		defer orig.Close(ctx)
		if budErr != nil {
			// Refusals of valid modules: the names it adds, and a tail
			// call wazero makes a call inside a try block (stack.go).
			if !strings.Contains(budErr.Error(), "already imports") && !strings.Contains(budErr.Error(), "already exports") &&
				!strings.Contains(budErr.Error(), "inside a try block") {
				t.Fatalf("FlagBudget refuses a valid module: %v", budErr)
			}
		} else {
			cm, err := r.CompileModule(ctx, budOut)
			if err != nil {
				t.Fatalf("FlagBudget: valid module invalid after instrumentation: %v", err)
			}
			cm.Close(ctx)
			checkBudgetOutput(t, wasm, budOut)
		}
		// A valid module names no memory it lacks: FlagMemory accepts it
		// unless it exports MemoryName, with the expected structure.
		// wazero has no multi-memory, but it can check a FlagMemory output
		// whose flag memory is memory 0 (the original had none).
		if memErr != nil {
			if !strings.Contains(memErr.Error(), "already exports") {
				t.Fatalf("FlagMemory refuses a valid module: %v", memErr)
			}
			return
		}
		checkMemoryOutput(t, wasm, memOut)
		if imp, def := memoryCount(t, wasm); imp+def == 0 {
			cm, err := r.CompileModule(ctx, memOut)
			if err != nil {
				t.Fatalf("FlagMemory: valid module invalid after instrumentation: %v", err)
			}
			cm.Close(ctx)
		}
	})
}

// compileUntrusted is r.CompileModule taking a panic in wazero for an
// invalid module, as the wazero engine does (v1.12.0's validator panics on
// a type index out of range in the function section).
func compileUntrusted(ctx context.Context, r wazero.Runtime, wasm []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			cm, err = nil, fmt.Errorf("wazero panicked: %v", p)
		}
	}()
	return r.CompileModule(ctx, wasm)
}

// ---- FlagMemory ----

// wantMemoryCheck spells out the FlagMemory check for flag memory m,
// independently of memoryCheck: i32.const 0; i32.load align=2 memidx=m
// offset=0 (the plain memarg for m == 0, flags 2|0x40 and the index
// otherwise); if unreachable end.
func wantMemoryCheck(m uint32) []byte {
	if m == 0 {
		return []byte{0x41, 0x00, 0x28, 0x02, 0x00, 0x04, 0x40, 0x00, 0x0b}
	}
	return append(append([]byte{0x41, 0x00, 0x28, 0x42}, wasmbin.AppendUint64(nil, uint64(m))...), 0x00, 0x04, 0x40, 0x00, 0x0b)
}

// rawSections splits a module into its sections, in order.
func rawSections(tb testing.TB, wasm []byte) []section {
	tb.Helper()
	var secs []section
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		r := newReaderAt(wasm, 8)
		for !r.done() {
			id := r.byte()
			secs = append(secs, section{id, r.bytes(int(r.u32()))})
		}
		return nil
	}()
	if err != nil {
		tb.Fatalf("cannot split the module into sections: %v", err)
	}
	return secs
}

// memoryCount is the number of memories a module imports and defines.
func memoryCount(tb testing.TB, wasm []byte) (imported, defined uint32) {
	for _, s := range rawSections(tb, wasm) {
		switch s.id {
		case wasmbin.SectionIDImport:
			imported = countImports(s.body).memories
		case wasmbin.SectionIDMemory:
			defined = newReader(s.body).u32()
		}
	}
	return imported, defined
}

// checkMemoryOutput decodes a FlagMemory output and checks its structure
// against its input: the sections are in order and appear once; every
// section but the memory, export and code sections is unchanged; the
// memory section ends with the added 1..1 memory, index M (the input's
// memory count); the export section ends with MemoryName exporting memory
// M and names it once; and there are as many function bodies. But for the
// helpers of split bulk instructions (bulk.go), if any: the type section
// ends with their type, (i32 i32 i32) -> (), the function section with
// one function of that type each, the code section with their bodies.
func checkMemoryOutput(tb testing.TB, in, out []byte) {
	tb.Helper()
	if string(out[:8]) != string(in[:8]) {
		tb.Fatalf("header changed: % x", out[:8])
	}
	helpers := helperCount(tb, in, out)
	imp, def := memoryCount(tb, in)
	m := imp + def
	inSecs, outSecs := rawSections(tb, in), rawSections(tb, out)
	inByID := map[byte][]byte{}
	for _, s := range inSecs {
		if s.id != wasmbin.SectionIDCustom {
			inByID[s.id] = s.body
		}
	}
	order := map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}
	last := 0
	var sawMemory, sawExport, sawCode bool
	for _, s := range outSecs {
		if s.id == wasmbin.SectionIDCustom {
			continue
		}
		if order[s.id] <= last {
			tb.Fatalf("section %d out of order or repeated", s.id)
		}
		last = order[s.id]
		r := newReader(s.body)
		switch s.id {
		case wasmbin.SectionIDMemory:
			sawMemory = true
			if n := r.u32(); n != def+1 {
				tb.Fatalf("%d memories defined, want %d", n, def+1)
			}
			if !bytes.HasSuffix(s.body, []byte{0x01, 0x01, 0x01}) {
				tb.Fatalf("the last memory is not limits 1..1: % x", s.body)
			}
			if old, ok := inByID[wasmbin.SectionIDMemory]; ok && !bytes.Equal(s.body[r.pos():len(s.body)-3], old[newReader(old).skipU32():]) {
				tb.Fatal("the original memories changed")
			}
		case wasmbin.SectionIDExport:
			sawExport = true
			found := 0
			for n := r.u32(); n > 0; n-- {
				name, kind, idx := r.name(), r.byte(), r.u32()
				if name != MemoryName {
					continue
				}
				found++
				if kind != 0x02 || idx != m {
					tb.Fatalf("%s exports kind %d index %d, want memory %d", name, kind, idx, m)
				}
			}
			if found != 1 {
				tb.Fatalf("%s exported %d times", MemoryName, found)
			}
		case wasmbin.SectionIDCode:
			sawCode = true
			n := r.u32()
			if old, ok := inByID[wasmbin.SectionIDCode]; ok && newReader(old).u32()+uint32(helpers) != n {
				tb.Fatalf("%d function bodies, want %d and %d helpers", n, newReader(old).u32(), helpers)
			}
			for ; n > 0; n-- {
				r.bytes(int(r.u32()))
			}
		case wasmbin.SectionIDType:
			old := inByID[s.id]
			types := newReader(old).u32()
			want := old
			if helpers > 0 {
				want = append(wasmbin.AppendUint64(nil, uint64(types)+1), old[newReader(old).skipU32():]...)
				want = append(want, wantHelperType...)
			}
			if !bytes.Equal(s.body, want) {
				tb.Fatalf("type section % x, want % x", s.body, want)
			}
		case wasmbin.SectionIDFunction:
			checkHelperFunctions(tb, inByID[s.id], s.body, helpers, newReader(inByID[wasmbin.SectionIDType]).u32())
		case wasmbin.SectionIDData:
			checkDataEquivalent(tb, inByID[s.id], s.body) // segments may be merged
		default:
			if !bytes.Equal(s.body, inByID[s.id]) {
				tb.Fatalf("section %d changed", s.id)
			}
		}
	}
	if !sawMemory || !sawExport {
		tb.Fatal("no memory or export section")
	}
	if _, ok := inByID[wasmbin.SectionIDCode]; ok != sawCode {
		tb.Fatal("the code section appeared or vanished")
	}
}

func (r *reader) skipU32() int { r.u32(); return r.pos() }

// wabt returns the path of a wabt tool, skipping the test without it.
func wabt(tb testing.TB, tool string) string {
	tb.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		tb.Skipf("%s not installed (Debian package wabt; make setup installs it)", tool)
	}
	return p
}

// wabtCheck validates a module with wasm-validate --enable-multi-memory
// (and threads, for the atomics) and checks in wasm2wat's text that every
// loop begins with the check reading memory m.
func wabtCheck(tb testing.TB, wasm []byte, m uint32) {
	tb.Helper()
	load := "i32.load"
	if m != 0 {
		load = fmt.Sprintf("i32.load %d", m)
	}
	wabtCheckLines(tb, wasm, []string{"--enable-multi-memory", "--enable-threads"}, []string{"i32.const 0", load, "if", "unreachable", "end"})
}

// wabtCheckLines validates a module with wasm-validate and the given
// feature flags, and checks in wasm2wat's text (with the same flags) that
// every loop begins with the lines want ("*" matches any operand of an
// instruction): every loop gets the check (in code that runs: wasm2wat
// prints dead loops too, which the fixtures do not have). Where else the
// checks go, the placement tests check.
func wabtCheckLines(tb testing.TB, wasm []byte, flags, want []string) {
	tb.Helper()
	validate, wat := wabt(tb, "wasm-validate"), wabt(tb, "wasm2wat")
	f := filepath.Join(tb.TempDir(), "m.wasm")
	if err := os.WriteFile(f, wasm, 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(validate, append(flags, f)...).CombinedOutput(); err != nil {
		tb.Fatalf("wasm-validate: %v\n%s", err, out)
	}
	text, err := exec.Command(wat, append(flags, f)...).Output()
	if err != nil {
		tb.Fatalf("wasm2wat: %v", err)
	}
	lines := strings.Split(string(text), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
		if c := strings.Index(lines[i], ";;"); c >= 0 {
			lines[i] = strings.TrimSpace(lines[i][:c])
		}
	}
	match := func(line, w string) bool {
		line = strings.TrimRight(line, ")") // "end)" ends the function
		if pre, ok := strings.CutSuffix(w, "*"); ok {
			return strings.HasPrefix(line, pre)
		}
		return line == w
	}
	funcs, loops := 0, 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "(func"):
			funcs++
			continue
		case l == "loop" || strings.HasPrefix(l, "loop "):
			loops++
		default:
			continue
		}
		for k, w := range want {
			if i+1+k >= len(lines) || !match(lines[i+1+k], w) {
				tb.Fatalf("line %d (%q) is not followed by the check %q:\n%s", i+1, l, want, strings.Join(lines[i:min(len(lines), i+1+len(want))], "\n"))
			}
		}
	}
	if funcs == 0 {
		tb.Fatalf("no function in wasm2wat's output:\n%s", text)
	}
	tb.Logf("%d functions, %d loops checked", funcs, loops)
}

// TestInstrumentMemoryFixtures: every fixture that wazero compiles is
// instrumented in FlagMemory mode into a module of the expected structure
// that wabt validates (with multi-memory), with the check at every loop
// header.
func TestInstrumentMemoryFixtures(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	n := 0
	for name, b := range fixtures(t) {
		if _, err := r.CompileModule(ctx, b); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			out, err := InstrumentWith(b, FlagMemory)
			if err != nil {
				t.Fatal(err)
			}
			checkMemoryOutput(t, b, out)
			imp, def := memoryCount(t, b)
			wabtCheck(t, out, imp+def)
		})
		n++
	}
	if n == 0 {
		t.Fatal("no fixture compiles")
	}
}

// mod assembles a module: sections given as id then body, in order.
func mod(secs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		out = append(out, s[0])
		out = wasmbin.AppendUint64(out, uint64(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func sec(id byte, body ...byte) []byte { return append([]byte{id}, body...) }

// funcModule is a module with imported and defined memories (min 1 page
// each, the imported ones from "env" "m0", "m1", ...) and one function ()
// -> () whose body (without the end) is code.
func funcModule(imported, defined int, code ...byte) []byte {
	secs := [][]byte{sec(1, 1, 0x60, 0, 0)}
	if imported > 0 {
		imp := []byte{byte(imported)}
		for i := 0; i < imported; i++ {
			imp = append(imp, 3, 'e', 'n', 'v', 2, 'm', '0'+byte(i), 0x02, 0x00, 0x01)
		}
		secs = append(secs, sec(2, imp...))
	}
	secs = append(secs, sec(3, 1, 0))
	if defined > 0 {
		mem := []byte{byte(defined)}
		for i := 0; i < defined; i++ {
			mem = append(mem, 0x00, 0x01)
		}
		secs = append(secs, sec(5, mem...))
	}
	body := append(append([]byte{0}, code...), 0x0b)
	secs = append(secs, sec(10, append(append([]byte{1}, wasmbin.AppendUint64(nil, uint64(len(body)))...), body...)...))
	return mod(secs...)
}

// memoryOps: code that names memory index idx, for every kind of
// instruction that names a memory. Each leaves the stack empty.
func memoryOps(idx uint32) map[string][]byte {
	x := wasmbin.AppendUint64(nil, uint64(idx))
	memarg := func(align byte) []byte { // explicit index, offset 0
		if idx == 0 {
			return []byte{align, 0}
		}
		return append(append([]byte{align | 0x40}, x...), 0)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	v128 := append([]byte{0xfd, 0x0c}, make([]byte, 16)...)
	return map[string][]byte{
		"i32.load":           cat([]byte{0x41, 0, 0x28}, memarg(2), []byte{0x1a}),
		"i64.store":          cat([]byte{0x41, 0, 0x42, 0, 0x37}, memarg(3)),
		"i32.load8_u":        cat([]byte{0x41, 0, 0x2d}, memarg(0), []byte{0x1a}),
		"memory.size":        cat([]byte{0x3f}, x, []byte{0x1a}),
		"memory.grow":        cat([]byte{0x41, 1, 0x40}, x, []byte{0x1a}),
		"memory.fill":        cat([]byte{0x41, 0, 0x41, 0, 0x41, 4, 0xfc, 11}, x),
		"memory.copy dst":    cat([]byte{0x41, 0, 0x41, 0, 0x41, 4, 0xfc, 10}, x, []byte{0}),
		"memory.copy src":    cat([]byte{0x41, 0, 0x41, 0, 0x41, 4, 0xfc, 10, 0}, x),
		"memory.init":        cat([]byte{0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 8, 0}, x),
		"i32.atomic.load":    cat([]byte{0x41, 0, 0xfe, 0x10}, memarg(2), []byte{0x1a}),
		"atomic.notify":      cat([]byte{0x41, 0, 0x41, 1, 0xfe, 0x00}, memarg(2), []byte{0x1a}),
		"i32.atomic.rmw.add": cat([]byte{0x41, 0, 0x41, 1, 0xfe, 0x1e}, memarg(2), []byte{0x1a}),
		"v128.load":          cat([]byte{0x41, 0, 0xfd, 0x00}, memarg(4), []byte{0x1a}),
		"v128.store":         cat([]byte{0x41, 0}, v128, []byte{0xfd, 0x0b}, memarg(4)),
		"v128.load32_zero":   cat([]byte{0x41, 0, 0xfd, 92}, memarg(2), []byte{0x1a}),
		"v128.load8_lane":    cat([]byte{0x41, 0}, v128, []byte{0xfd, 84}, memarg(0), []byte{0, 0x1a}),
	}
}

// TestInstrumentMemoryRefusesFlagAccess: in FlagMemory mode, a module that
// names the memory index the flag would get (or any beyond it), with any
// instruction that names a memory, in a data segment or in an export, is
// refused: invalid as it stands, it would read, write, grow or export the
// flag after a naive rewrite.
func TestInstrumentMemoryRefusesFlagAccess(t *testing.T) {
	for _, c := range []struct{ imported, defined int }{{0, 0}, {0, 1}, {1, 0}, {1, 2}} {
		m := uint32(c.imported + c.defined)
		for _, idx := range []uint32{m, m + 1, 200} {
			for op, code := range memoryOps(idx) {
				wasm := funcModule(c.imported, c.defined, code...)
				// Refused for the memory index, not for another decoding
				// error: TestInstrumentMemoryAcceptsOwnMemories accepts the
				// same code on the module's own memories.
				if _, err := InstrumentWith(wasm, FlagMemory); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "memory index") {
					t.Errorf("%d+%d memories, %s on memory %d: want ErrUnsupported for the memory index, got %v", c.imported, c.defined, op, idx, err)
				}
			}
		}
	}
	// A memory index in a non-minimal LEB128 (1 as 0x81 0x00).
	wasm := funcModule(0, 1, 0x41, 0, 0x28, 0x42, 0x81, 0x00, 0, 0x1a)
	if _, err := InstrumentWith(wasm, FlagMemory); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "memory index 1") {
		t.Errorf("non-minimal memory index: want ErrUnsupported, got %v", err)
	}
	// memarg flags beyond bit 6 (here 0x82, LEB128 0x82 0x01) are no known
	// encoding.
	wasm = funcModule(0, 1, 0x41, 0, 0x28, 0x82, 0x01, 0, 0x1a)
	if _, err := InstrumentWith(wasm, FlagMemory); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "memarg flags") {
		t.Errorf("memarg flags 0x82: want ErrUnsupported, got %v", err)
	}

	typeFunc := [][]byte{sec(1, 1, 0x60, 0, 0), sec(3, 1, 0)}
	code := sec(10, 1, 2, 0, 0x0b)
	oneMemory := sec(5, 1, 0x00, 0x01)
	for _, c := range []struct {
		name string
		wasm []byte
		why  string // in the error
	}{
		// (data (memory 1) (i32.const 0) "\01") with one memory.
		{"active data segment on memory M", mod(append(typeFunc, oneMemory, code, sec(11, 1, 2, 1, 0x41, 0, 0x0b, 1, 1))...), "memory index 1"},
		// (data (i32.const 0) "\01") without a memory.
		{"active data segment on memory 0 = M", mod(append(typeFunc, code, sec(11, 1, 0, 0x41, 0, 0x0b, 1, 1))...), "memory index 0"},
		{"unknown data segment flags", mod(append(typeFunc, oneMemory, code, sec(11, 1, 3, 0x41, 0, 0x0b, 1, 1))...), "data segment flags"},
		// (export "m" (memory 1)) with one memory.
		{"export of memory M", mod(append(typeFunc, oneMemory, sec(7, 1, 1, 'm', 0x02, 1), code)...), "memory index 1"},
		// (export "wasmprov_interrupt" (func 0)).
		{"export named MemoryName", mod(append(typeFunc, oneMemory, sec(7, append(append([]byte{1, byte(len(MemoryName))}, MemoryName...), 0x00, 0)...), code)...), "already exports"},
	} {
		if _, err := InstrumentWith(c.wasm, FlagMemory); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: want ErrUnsupported (%s), got %v", c.name, c.why, err)
		}
	}
	for _, f := range []Flag{FlagBudget + 1, -1} {
		if _, err := InstrumentWith(funcModule(0, 1), f); !errors.Is(err, ErrUnsupported) {
			t.Errorf("unknown Flag %d: want ErrUnsupported, got %v", f, err)
		}
	}
}

// TestInstrumentMemoryAcceptsOwnMemories: the same instructions on the
// module's own memories are instrumented, and the result validates; the
// memory section is created in its place when the module defines none.
func TestInstrumentMemoryAcceptsOwnMemories(t *testing.T) {
	for _, c := range []struct{ imported, defined int }{{0, 1}, {1, 0}, {1, 2}} {
		m := uint32(c.imported + c.defined)
		for _, idx := range []uint32{0, m - 1} {
			// Every instruction but memory.init (which needs a data
			// segment; see below) in one function.
			ops := memoryOps(idx)
			var code []byte
			for _, op := range slices.Sorted(maps.Keys(ops)) {
				if op != "memory.init" {
					code = append(code, ops[op]...)
				}
			}
			wasm := funcModule(c.imported, c.defined, code...)
			out, err := InstrumentWith(wasm, FlagMemory)
			if err != nil {
				t.Fatalf("%d+%d memories, instructions on memory %d: %v", c.imported, c.defined, idx, err)
			}
			checkMemoryOutput(t, wasm, out)
			if _, err := exec.LookPath("wasm-validate"); err == nil {
				wabtCheck(t, out, m)
			}
		}
	}
	// memory.init 0 0 and an active segment on memory 0, with a data count
	// section: the memory section goes before them.
	wasm := mod(sec(1, 1, 0x60, 0, 0), sec(3, 1, 0), sec(5, 1, 0x00, 0x01), sec(12, 2),
		sec(10, 1, 15, 0, 0x41, 0, 0x41, 0, 0x41, 1, 0xfc, 8, 0, 0, 0xfc, 9, 0, 0x0b),
		sec(11, 2, 1, 1, 7, 0, 0x41, 0, 0x0b, 1, 8))
	out, err := InstrumentWith(wasm, FlagMemory)
	if err != nil {
		t.Fatal(err)
	}
	checkMemoryOutput(t, wasm, out)
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		wabtCheck(t, out, 1)
	}
}

// TestInstrumentMemoryNoMemory: a module without memory gets memory 0, read
// with the plain memarg; the memory section is inserted before the global,
// export, start, element and code sections, and a loop gets the check.
func TestInstrumentMemoryNoMemory(t *testing.T) {
	wasm := mod(
		sec(1, 1, 0x60, 0, 0),                // type () -> ()
		sec(2, 1, 1, 'e', 1, 'f', 0x00, 0),   // import "e" "f" (func (type 0))
		sec(3, 1, 0),                         // func 1: type 0
		sec(4, 1, 0x70, 0x00, 1),             // table 1 funcref
		sec(6, 1, 0x7f, 0x00, 0x41, 7, 0x0b), // global i32 (i32.const 7)
		sec(7, 1, 1, 'g', 0x03, 0),           // export "g" (global 0)
		sec(8, 1),                            // start func 1
		sec(9, 1, 0, 0x41, 0, 0x0b, 1, 1),    // elem (i32.const 0) func 1
		// func 1: (local i32) loop br_if 0 (local.get 0) end
		sec(10, 1, 11, 1, 1, 0x7f, 0x03, 0x40, 0x20, 0, 0x0d, 0, 0x0b, 0x0b),
	)
	out, err := InstrumentWith(wasm, FlagMemory)
	if err != nil {
		t.Fatal(err)
	}
	checkMemoryOutput(t, wasm, out)
	if got, want := bytes.Count(out, wantMemoryCheck(0)), 2; got != want {
		t.Fatalf("%d checks, want %d (entry and loop)", got, want)
	}
	if i, j := bytes.Index(out, []byte{5, 4, 1, 1, 1, 1}), bytes.Index(out, []byte{6, 6, 1, 0x7f}); i < 0 || j < i {
		t.Fatalf("the memory section is missing or after the global section: % x", out)
	}
	wabtCheck(t, out, 0)

	// A module that has nothing but a type section gets memory and export
	// sections at the end.
	wasm = mod(sec(1, 1, 0x60, 0, 0))
	out, err = InstrumentWith(wasm, FlagMemory)
	if err != nil {
		t.Fatal(err)
	}
	checkMemoryOutput(t, wasm, out)
	want := append(append([]byte{}, wasm...), 5, 4, 1, 1, 1, 1, 7, byte(len(MemoryName)+4), 1, byte(len(MemoryName)))
	want = append(append(want, MemoryName...), 0x02, 0)
	if !bytes.Equal(out, want) {
		t.Fatalf("got  % x\nwant % x", out, want)
	}
}

// TestMemoryFlagStopsLoopWazero runs a FlagMemory module whose flag memory
// is memory 0 (the original has none, so wazero, without multi-memory, can
// run it) and stops its loop by writing word 0 of the exported memory.
func TestMemoryFlagStopsLoopWazero(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("needs wazero's compiler: the interpreter's non-atomic read would race")
	}
	// (func (export "spin") (loop br 0)) (func (export "ok") (result i32) i32.const 7)
	wasm := mod(
		sec(1, 2, 0x60, 0, 0, 0x60, 0, 1, 0x7f),
		sec(3, 2, 0, 1),
		sec(7, 2, 4, 's', 'p', 'i', 'n', 0x00, 0, 2, 'o', 'k', 0x00, 1),
		sec(10, 2, 7, 0, 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b, 4, 0, 0x41, 7, 0x0b),
	)
	out, err := InstrumentWith(wasm, FlagMemory)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer r.Close(ctx)
	m, err := r.Instantiate(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	mem := m.ExportedMemory(MemoryName)
	if mem == nil || mem.Size() != 65536 {
		t.Fatalf("no 1-page memory %s", MemoryName)
	}
	if res, err := m.ExportedFunction("ok").Call(ctx); err != nil || res[0] != 7 {
		t.Fatal(res, err)
	}
	word, _ := mem.Read(0, 4)
	flag := (*uint32)(unsafe.Pointer(&word[0]))
	// wazero's compiled loop is no Go preemption point: a garbage
	// collection that starts while it spins waits for it forever, and
	// stops the goroutine that would set the flag. No collection, then.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	time.AfterFunc(50*time.Millisecond, func() { atomic.StoreUint32(flag, 1) })
	start := time.Now()
	if _, err := m.ExportedFunction("spin").Call(ctx); err == nil {
		t.Fatal("the loop returned")
	} else {
		t.Logf("stopped after %v: %v", time.Since(start), err)
	}
	if _, err := m.ExportedFunction("ok").Call(ctx); err == nil {
		t.Fatal("a call with the flag set returned")
	}
}
