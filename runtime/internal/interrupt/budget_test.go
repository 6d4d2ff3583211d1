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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// ---- FlagBudget ----

// wantBudgetCheck spells out the FlagBudget check charging w, for budget
// global g and yield function y, independently of appendCheck:
//
//	global.get g; i32.const w; i32.sub; global.set g
//	global.get g; i32.const 1; i32.lt_s; if
//	  i32.const 524288; global.set g; call y
//	end
func wantBudgetCheck(g, y, w uint32) []byte {
	x := wasmbin.AppendUint64(nil, uint64(g))
	return cat([]byte{0x23}, x, []byte{0x41}, wasmbin.AppendInt64(nil, int64(w)), []byte{0x6b, 0x24}, x, []byte{0x23}, x,
		[]byte{0x41, 0x01, 0x48, 0x04, 0x40, 0x41, 0x80, 0x80, 0x20, 0x24}, x, []byte{0x10}, wasmbin.AppendUint64(nil, uint64(y)), []byte{0x0b})
}

// wantStackEnter spells out a counted function's entry taking e bytes from
// stack counter g, independently of appendStackEnter:
//
//	global.get g; i32.const e; i32.sub; global.set g
func wantStackEnter(g uint32, e int64) []byte {
	x := wasmbin.AppendUint64(nil, uint64(g))
	return cat([]byte{0x23}, x, []byte{0x41}, wasmbin.AppendInt64(nil, e), []byte{0x6b, 0x24}, x)
}

// wantStackCheck spells out the first check of a counted function, for
// budget global g, yield y and stack counter s, charging w:
//
//	global.get g; i32.const w; i32.sub; global.set g
//	global.get g; i32.const 1; i32.sub; global.get s; i32.or; i32.const 0; i32.lt_s; if
//	  global.get s; i32.const 0; i32.lt_s; if unreachable end
//	  i32.const 524288; global.set g; call y
//	end
func wantStackCheck(g, y, s, w uint32) []byte {
	x, z := wasmbin.AppendUint64(nil, uint64(g)), wasmbin.AppendUint64(nil, uint64(s))
	return cat([]byte{0x23}, x, []byte{0x41}, wasmbin.AppendInt64(nil, int64(w)), []byte{0x6b, 0x24}, x, []byte{0x23}, x,
		[]byte{0x41, 1, 0x6b, 0x23}, z, []byte{0x72, 0x41, 0, 0x48, 0x04, 0x40, 0x23}, z, []byte{0x41, 0, 0x48, 0x04, 0x40, 0x00, 0x0b},
		[]byte{0x41, 0x80, 0x80, 0x20, 0x24}, x, []byte{0x10}, wasmbin.AppendUint64(nil, uint64(y)), []byte{0x0b})
}

// wantStackExit: global.get g; i32.const e; i32.add; global.set g.
func wantStackExit(g uint32, e int64) []byte {
	x := wasmbin.AppendUint64(nil, uint64(g))
	return cat([]byte{0x23}, x, []byte{0x41}, wasmbin.AppendInt64(nil, e), []byte{0x6a, 0x24}, x)
}

// wantStackGlobal is the stack counter's global: (mut i32) (i32.const
// StackLimit).
func wantStackGlobal() []byte {
	return cat([]byte{0x7f, 0x01, 0x41}, wasmbin.AppendInt64(nil, StackLimit), []byte{0x0b})
}

// wantStackExport is the export of global g as StackName.
func wantStackExport(g uint32) []byte {
	return cat([]byte{byte(len(StackName))}, []byte(StackName), []byte{0x03}, wasmbin.AppendUint64(nil, uint64(g)))
}

// wantBudgetLines is the check as wasm2wat --no-debug-names prints it; "*"
// matches what it charges.
func wantBudgetLines(g, y uint32) []string {
	get, set := fmt.Sprintf("global.get %d", g), fmt.Sprintf("global.set %d", g)
	return []string{get, "i32.const *", "i32.sub", set, get, "i32.const 1", "i32.lt_s", "if", fmt.Sprintf("i32.const %d", Budget), set, fmt.Sprintf("call %d", y), "end"}
}

// yieldImport is the import entry FlagBudget appends, with type t.
func yieldImport(t uint32) []byte {
	e := append(wasmbin.AppendUint64(nil, uint64(len(YieldModule))), YieldModule...)
	e = append(wasmbin.AppendUint64(e, uint64(len(YieldName))), YieldName...)
	return append(append(e, 0x00), wasmbin.AppendUint64(nil, uint64(t))...)
}

// budgetFixtures: the package's fixtures, the runtime's ABI fixtures and
// this package's own test modules, by file name.
func budgetFixtures(tb testing.TB) map[string][]byte {
	out := fixtures(tb)
	for _, g := range []string{filepath.Join("..", "..", "testdata", "abi", "*.wasm"), filepath.Join("testdata", "*.wasm")} {
		paths, _ := filepath.Glob(g)
		if len(paths) == 0 {
			tb.Fatalf("no fixtures %s", g)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			out[filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p)] = b
		}
	}
	return out
}

// moduleFacts: what FlagBudget's output depends on.
type moduleFacts struct {
	types, imports, definedGlobals uint32
	imported                       imports
}

func facts(tb testing.TB, wasm []byte) moduleFacts {
	var f moduleFacts
	for _, s := range rawSections(tb, wasm) {
		r := newReader(s.body)
		switch s.id {
		case wasmbin.SectionIDType:
			f.types = r.u32()
		case wasmbin.SectionIDImport:
			f.imports = r.u32()
			f.imported = countImports(s.body)
		case wasmbin.SectionIDGlobal:
			f.definedGlobals = r.u32()
		}
	}
	return f
}

// customSections returns a module's custom sections (name, body) in order.
func customSections(tb testing.TB, wasm []byte) (names []string, bodies [][]byte) {
	for _, s := range rawSections(tb, wasm) {
		if s.id == wasmbin.SectionIDCustom {
			r := newReader(s.body)
			names = append(names, r.name())
			bodies = append(bodies, s.body)
		}
	}
	return names, bodies
}

// functionNames decodes the function names (subsection 1) of a name
// section's body (after its name); ok is false if it does not decode.
func functionNames(body []byte) (names map[uint32]string, ok bool) {
	defer func() {
		if recover() != nil {
			names, ok = nil, false
		}
	}()
	names = map[uint32]string{}
	r := newReader(body)
	for !r.done() {
		id := r.byte()
		sub := newReader(r.bytes(int(r.u32())))
		if id != 1 {
			continue
		}
		for n := sub.u32(); n > 0; n-- {
			i := sub.u32()
			names[i] = sub.name()
		}
	}
	return names, true
}

// checkBudgetOutput decodes a FlagBudget output and checks its structure
// against its input: sections in order and once each; the type section
// ends with the added () -> () (type T, the input's type count), the
// import section with the yield import of type T, the global section with
// the budget global (mutable i32, Budget); exports and the start function
// name the same functions, moved up by one from Y (the input's imported
// function count); there are as many function bodies, each with its
// locals; the function, memory, tag and data count sections and the custom
// sections but "name" are unchanged, and a name section names the same
// functions, moved up by one from Y. Where the checks are is the placement
// tests' business (TestShapesChecksBounded counts what runs between two of
// them; the wabt checks find one at every loop). The helpers of split bulk
// instructions (bulk.go) come last: their type (i32 i32 i32) -> () after
// the added types, and one function of that type each after the module's
// functions (helperCount).
func checkBudgetOutput(tb testing.TB, in, out []byte) {
	tb.Helper()
	if string(out[:8]) != string(in[:8]) {
		tb.Fatalf("header changed: % x", out[:8])
	}
	f := facts(tb, in)
	helpers := helperCount(tb, in, out)
	y := f.imported.funcs
	remap := func(i uint32) uint32 {
		if i < y {
			return i
		}
		return i + 1
	}
	inByID := map[byte][]byte{}
	for _, s := range rawSections(tb, in) {
		if s.id != wasmbin.SectionIDCustom {
			inByID[s.id] = s.body
		}
	}
	// vecTail returns the bytes of a vector's items, after its count.
	vecTail := func(body []byte) []byte { return body[newReader(body).skipU32():] }
	order := map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}
	last := 0
	seen := map[byte]bool{}
	for _, s := range rawSections(tb, out) {
		if s.id == wasmbin.SectionIDCustom {
			continue
		}
		if order[s.id] <= last {
			tb.Fatalf("section %d out of order or repeated", s.id)
		}
		last = order[s.id]
		seen[s.id] = true
		r := newReader(s.body)
		old, hadOld := inByID[s.id]
		appended := func(wantCount uint32, items ...[]byte) {
			tb.Helper()
			item := cat(items...)
			if n := r.u32(); n != wantCount+uint32(len(items)) {
				tb.Fatalf("section %d: %d items, want %d", s.id, n, wantCount+uint32(len(items)))
			}
			if !bytes.HasSuffix(s.body, item) {
				tb.Fatalf("section %d does not end with % x: % x", s.id, item, s.body)
			}
			if hadOld && !bytes.Equal(s.body[r.pos():len(s.body)-len(item)], vecTail(old)) {
				tb.Fatalf("section %d: the original items changed", s.id)
			}
		}
		switch s.id {
		case wasmbin.SectionIDType:
			added := append([][]byte{{0x60, 0x00, 0x00}}, wantWrapTypes(tb, inByID[wasmbin.SectionIDType])...)
			if helpers > 0 {
				added = append(added, wantHelperType)
			}
			appended(f.types, added...)
		case wasmbin.SectionIDFunction:
			checkHelperFunctions(tb, old, s.body, helpers, f.types+uint32(len(wantWrapTypes(tb, inByID[wasmbin.SectionIDType])))+1)
		case wasmbin.SectionIDImport:
			appended(f.imports, yieldImport(f.types))
		case wasmbin.SectionIDGlobal:
			if n := r.u32(); n != f.definedGlobals+2 {
				tb.Fatalf("%d globals defined, want %d", n, f.definedGlobals+2)
			}
			if !bytes.HasSuffix(s.body, cat([]byte{0x7f, 0x01, 0x41, 0x80, 0x80, 0x20, 0x0b, 0x7f, 0x01, 0x41}, wasmbin.AppendInt64(nil, StackLimit), []byte{0x0b})) {
				tb.Fatalf("the last globals are not (mut i32) (i32.const %d) (mut i32) (i32.const %d): % x", Budget, StackLimit, s.body)
			}
		case wasmbin.SectionIDExport:
			or := newReader(old)
			n := r.u32()
			var on uint32
			if hadOld {
				on = or.u32()
			}
			if n != on+1 {
				tb.Fatalf("%d exports, want %d", n, on+1)
			}
			if !bytes.HasSuffix(s.body, exportEntry(StackName, wasmbin.ExternGlobal, f.imported.globals+f.definedGlobals+1)) {
				tb.Fatalf("the last export is not the stack counter: % x", s.body)
			}
			for n--; n > 0; n-- {
				name, kind, idx := r.name(), r.byte(), r.u32()
				oname, okind, oidx := or.name(), or.byte(), or.u32()
				if kind == 0x00 {
					oidx = remap(oidx)
				}
				if name != oname || kind != okind || idx != oidx {
					tb.Fatalf("export %q kind %d index %d, want %q kind %d index %d", name, kind, idx, oname, okind, oidx)
				}
			}
		case wasmbin.SectionIDStart:
			if got, want := r.u32(), remap(newReader(old).u32()); got != want {
				tb.Fatalf("start function %d, want %d", got, want)
			}
		case wasmbin.SectionIDCode:
			n := r.u32()
			if on := newReader(old).u32(); on+uint32(helpers) != n {
				tb.Fatalf("%d function bodies, want %d and %d helpers", n, on, helpers)
			}
			for ; n > 0; n-- {
				fr := newReader(r.bytes(int(r.u32())))
				for l := fr.u32(); l > 0; l-- {
					fr.u32()
					fr.valType()
				}
			}
		case wasmbin.SectionIDTable, wasmbin.SectionIDElement:
			// Function indices rewritten: the remap and wabt tests check them.
		case wasmbin.SectionIDData:
			checkDataEquivalent(tb, old, s.body) // segments may be merged
		default:
			if !bytes.Equal(s.body, old) {
				tb.Fatalf("section %d changed", s.id)
			}
		}
	}
	for id := range inByID {
		if !seen[id] {
			tb.Fatalf("section %d vanished", id)
		}
	}
	for _, id := range []byte{wasmbin.SectionIDType, wasmbin.SectionIDImport, wasmbin.SectionIDGlobal, wasmbin.SectionIDExport} {
		if !seen[id] {
			tb.Fatalf("no section %d", id)
		}
	}
	// Custom sections: only the name sections stay (FormatVersion 5), each
	// dropped (if it does not decode) or with its indices rewritten.
	inNames, inBodies := customSections(tb, in)
	outNames, outBodies := customSections(tb, out)
	j := 0
	for i, name := range inNames {
		if name != "name" {
			continue // dropped, whatever it holds
		}
		if j >= len(outNames) || outNames[j] != "name" {
			continue // dropped
		}
		{
			inR, outR := newReader(inBodies[i]), newReader(outBodies[j])
			inR.name()
			outR.name()
			want, ok := functionNames(inR.b[inR.pos():])
			got, ok2 := functionNames(outR.b[outR.pos():])
			if !ok2 {
				tb.Fatal("the name section does not decode")
			}
			if ok {
				remapped := map[uint32]string{}
				for i, n := range want {
					remapped[remap(i)] = n
				}
				if !maps.Equal(got, remapped) {
					tb.Fatalf("function names %v, want %v", got, remapped)
				}
			}
		}
		j++
	}
	if j != len(outNames) {
		tb.Fatalf("custom sections appeared: %q", outNames[j:])
	}
}

// wantHelperType is the type of the helpers of split bulk instructions:
// (func (param i32 i32 i32)).
var wantHelperType = []byte{0x60, 3, 0x7f, 0x7f, 0x7f, 0}

// helperCount is the number of helpers an output has: the functions it
// defines beyond its input's.
func helperCount(tb testing.TB, in, out []byte) int {
	tb.Helper()
	count := func(wasm []byte) int {
		for _, s := range rawSections(tb, wasm) {
			if s.id == wasmbin.SectionIDFunction {
				return int(newReader(s.body).u32())
			}
		}
		return 0
	}
	n := count(out) - count(in)
	if n < 0 {
		tb.Fatalf("%d functions fewer", -n)
	}
	return n
}

// checkHelperFunctions checks an output's function section (body) against
// its input's (old): the same entries, then helpers entries of type t.
func checkHelperFunctions(tb testing.TB, old, body []byte, helpers int, t uint32) {
	tb.Helper()
	var want []byte
	if old == nil {
		want = []byte{0}
	} else {
		want = append([]byte{}, old...)
	}
	r := newReader(want)
	n := r.u32()
	want = append(wasmbin.AppendUint64(nil, uint64(n)+uint64(helpers)), want[r.pos():]...)
	for range helpers {
		want = wasmbin.AppendUint64(want, uint64(t))
	}
	if !bytes.Equal(body, want) {
		tb.Fatalf("function section % x, want % x", body, want)
	}
}

// wantWrapTypes spells out the types FlagBudget appends after the yield's
// for a type section's types with several results: () -> (results), once
// for each list of results, in order.
func wantWrapTypes(tb testing.TB, types []byte) [][]byte {
	tb.Helper()
	if types == nil {
		return nil
	}
	var out [][]byte
	seen := map[string]bool{}
	r := newReader(types)
	for n := r.u32(); n > 0; n-- {
		r.byte()
		for p := r.u32(); p > 0; p-- {
			r.valType()
		}
		start := r.pos()
		k := r.u32()
		for i := k; i > 0; i-- {
			r.valType()
		}
		if res := r.b[start:r.pos()]; k >= 2 && !seen[string(res)] {
			seen[string(res)] = true
			out = append(out, cat([]byte{0x60, 0x00}, res))
		}
	}
	return out
}

// budgetWabtCheck validates a FlagBudget output with wabt and checks in its
// text that every loop begins with the check.
func budgetWabtCheck(tb testing.TB, in, out []byte) {
	tb.Helper()
	f := facts(tb, in)
	wabtCheckLines(tb, out, []string{"--no-debug-names"}, wantBudgetLines(f.imported.globals+f.definedGlobals, f.imported.funcs))
}

// instantiateWithStubs instantiates a compiled module in r, with every
// import but the yield function a host function that does nothing and
// returns zeros, a yield function that calls yield, and no start function
// but the module's own start section.
func instantiateWithStubs(ctx context.Context, tb testing.TB, r wazero.Runtime, cm wazero.CompiledModule, yield func()) (api.Module, error) {
	tb.Helper()
	byModule := map[string][]api.FunctionDefinition{}
	for _, d := range cm.ImportedFunctions() {
		m, _, _ := d.Import()
		if m != YieldModule {
			byModule[m] = append(byModule[m], d)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(byModule)) {
		b := r.NewHostModuleBuilder(m)
		for _, d := range byModule[m] {
			_, name, _ := d.Import()
			b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), d.ParamTypes(), d.ResultTypes()).Export(name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			tb.Fatalf("host module %s: %v", m, err)
		}
	}
	if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(yield).Export(YieldName).Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	return r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
}

// TestInstrumentBudgetFixtures: every fixture that wazero compiles is
// instrumented in FlagBudget mode into a module of the expected structure
// that wazero compiles and instantiates (with the yield import) and that
// wabt validates, with the check at every function entry and loop header.
func TestInstrumentBudgetFixtures(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	n := 0
	all := budgetFixtures(t)
	for _, name := range slices.Sorted(maps.Keys(all)) {
		b := all[name]
		if _, err := r.CompileModule(ctx, b); err != nil {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			out, err := InstrumentWith(b, FlagBudget)
			if err != nil {
				t.Fatal(err)
			}
			checkBudgetOutput(t, b, out)
			rt := wazero.NewRuntime(ctx)
			defer rt.Close(ctx)
			cm, err := rt.CompileModule(ctx, out)
			if err != nil {
				t.Fatalf("the instrumented module does not compile: %v", err)
			}
			if len(cm.ExportedFunctions()) == 0 && name != "missingexports.wasm" {
				t.Errorf("lost its exports")
			}
			if _, err := instantiateWithStubs(ctx, t, rt, cm, func() {}); err != nil {
				t.Fatalf("the instrumented module does not instantiate: %v", err)
			}
			budgetWabtCheck(t, b, out)
		})
	}
	if n == 0 {
		t.Fatal("no fixture compiles")
	}
}

// TestInstrumentBudgetGolden pins FlagBudget's output for a small module
// with an imported function and global, a defined function that calls
// another, an export, a start function and a function-index element
// segment: every defined function moves up by one, the check is the
// documented bytes.
func TestInstrumentBudgetGolden(t *testing.T) {
	// (import "e" "f" (func)) (import "e" "g" (global i32)) (table 1 funcref)
	// (global i32 (i32.const 1)) (export "x" (func 2)) (start 1)
	// (elem (i32.const 0) func 2)
	// (func $1 (call 2)) (func $2 (loop (br 0)))
	wasm := mod(
		sec(1, 1, 0x60, 0, 0),
		sec(2, 2, 1, 'e', 1, 'f', 0x00, 0, 1, 'e', 1, 'g', 0x03, 0x7f, 0x00),
		sec(3, 2, 0, 0),
		sec(4, 1, 0x70, 0x00, 1),
		sec(6, 1, 0x7f, 0, 0x41, 1, 0x0b),
		sec(7, 1, 1, 'x', 0x00, 2),
		sec(8, 1),
		sec(9, 1, 0, 0x41, 0, 0x0b, 1, 2),
		sec(10, 2, 4, 0, 0x10, 2, 0x0b, 7, 0, 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b),
	)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	// G = 2 (one imported global, one defined), Y = 1 (one imported
	// function), T = 1 (one type). The check charging 392:
	check := []byte{
		0x23, 2, // global.get 2
		0x41, 0x88, 0x03, // i32.const 392
		0x6b,    // i32.sub
		0x24, 2, // global.set 2
		0x23, 2, // global.get 2
		0x41, 1, // i32.const 1
		0x48,       // i32.lt_s
		0x04, 0x40, // if
		0x41, 0x80, 0x80, 0x20, // i32.const 524288
		0x24, 2, // global.set 2
		0x10, 1, // call 1
		0x0b, // end
	}
	w := rewriter{remap: true, globals: 2, yield: 1, budget: Budget}
	if !bytes.Equal(check, wantBudgetCheck(2, 1, 392)) || !bytes.Equal(check, w.appendCheck(nil, 392, false)) {
		t.Fatalf("the check is not the documented bytes: % x", w.appendCheck(nil, 392, false))
	}
	// Both functions start lazily, owing their callers callSlack (384)
	// and the call (8): 392 units. $1 calls at once, which needs a
	// check (392 + 8 > callSlack), and after the call (2, now 3) it owes
	// exitSlack + retCost = 24 at its end (> exitSlack): a check. $2's
	// loop: its header charges the back edge (br: 1); its entry edge (392)
	// costs far more, so a check before the loop charges it.
	//
	// The stack counter is global 3. $1 calls: it takes its frame's
	// estimate at its entry, its first check (before the call) also
	// tests the counter, and it gives the frame back after the check at
	// its end: frameBase (400) + 8 x 29 slots = 632. The slots: 3 for the
	// call (its value, and wazero's reloads of the memory's base and
	// length after it), 8 for each of the two checks and 8 for the
	// counter's own code (the instrumentation's values can be spilled
	// too), 2 for the function's merge. $2 calls nothing: not counted.
	f1 := cat([]byte{0}, wantStackEnter(3, 632), wantStackCheck(2, 1, 3, 392), []byte{0x10, 3}, wantBudgetCheck(2, 1, 24), wantStackExit(3, 632), []byte{0x0b})
	f2 := cat([]byte{0}, wantBudgetCheck(2, 1, 392), []byte{0x03, 0x40}, wantBudgetCheck(2, 1, 1), []byte{0x0c, 0, 0x0b, 0x0b})
	code := append(append(append([]byte{2, byte(len(f1))}, f1...), byte(len(f2))), f2...)
	want := mod(
		sec(1, 2, 0x60, 0, 0, 0x60, 0, 0),
		sec(2, append([]byte{3, 1, 'e', 1, 'f', 0x00, 0, 1, 'e', 1, 'g', 0x03, 0x7f, 0x00}, yieldImport(1)...)...),
		sec(3, 2, 0, 0),
		sec(4, 1, 0x70, 0x00, 1),
		sec(6, cat([]byte{3, 0x7f, 0, 0x41, 1, 0x0b, 0x7f, 0x01, 0x41, 0x80, 0x80, 0x20, 0x0b}, wantStackGlobal())...),
		sec(7, cat([]byte{2, 1, 'x', 0x00, 3}, wantStackExport(3))...),
		sec(8, 2),
		sec(9, 1, 0, 0x41, 0, 0x0b, 1, 3),
		sec(10, code...),
	)
	if !bytes.Equal(out, want) {
		t.Fatalf("got  % x\nwant % x", out, want)
	}
	checkBudgetOutput(t, wasm, out)
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		budgetWabtCheck(t, wasm, out)
	}

	// A module with nothing but a header gets the type, import, global
	// and export sections, in order.
	out, err = InstrumentWith(mod(), FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	want = mod(sec(1, 1, 0x60, 0, 0), sec(2, append([]byte{1}, yieldImport(0)...)...),
		sec(6, cat([]byte{2, 0x7f, 0x01, 0x41, 0x80, 0x80, 0x20, 0x0b}, wantStackGlobal())...),
		sec(7, cat([]byte{1}, wantStackExport(1))...))
	if !bytes.Equal(out, want) {
		t.Fatalf("empty module: got  % x\nwant % x", out, want)
	}
}

// TestInstrumentBudgetRefuses: a module that names the budget global, that
// already exports MemoryName or imports from YieldModule, or that the
// rewriter cannot decode where it must rewrite function indices, is
// refused.
func TestInstrumentBudgetRefuses(t *testing.T) {
	typeFunc := [][]byte{sec(1, 1, 0x60, 0, 0), sec(3, 1, 0)}
	code := sec(10, 1, 2, 0, 0x0b)
	oneGlobal := sec(6, 1, 0x7f, 0x00, 0x41, 0, 0x0b)
	for _, c := range []struct {
		name string
		wasm []byte
		why  string // in the error
	}{
		{"global.set G in code", funcModule(0, 0, 0x41, 0, 0x24, 0), "global index 0"},
		{"global.get G+1 in code", funcModule(0, 0, 0x23, 1, 0x1a), "global index 1"},
		// (global i32 (i32.const 0)) (memory 1) (data (global.get 1) "")
		{"global.get G in a data offset", mod(append(typeFunc, sec(5, 1, 0, 1), oneGlobal, code, sec(11, 1, 0, 0x23, 1, 0x0b, 0))...), "global index 1"},
		// (global i32 (global.get 0)) referring to itself: G = 1 is refused as well.
		{"global.get G in a global initialiser", mod(append(typeFunc, sec(6, 1, 0x7f, 0x00, 0x23, 1, 0x0b), code)...), "global index 1"},
		{"export of global G", mod(append(typeFunc, oneGlobal, sec(7, 1, 1, 'g', 0x03, 1), code)...), "global index 1"},
		{"export named MemoryName", mod(append(typeFunc, sec(7, append(append([]byte{1, byte(len(MemoryName))}, MemoryName...), 0x00, 0)...), code)...), "already exports"},
		{"import from YieldModule", mod(sec(1, 1, 0x60, 0, 0), sec(2, append(append([]byte{1, byte(len(YieldModule))}, YieldModule...), 1, 'z', 0x00, 0)...)), "already imports"},
		{"unknown element segment flags", mod(append(typeFunc, sec(9, 1, 8, 0), code)...), "element segment flags"},
		{"unknown element kind", mod(append(typeFunc, sec(9, 1, 1, 0x01, 0), code)...), "element kind"},
		{"unknown data segment flags", mod(append(typeFunc, sec(5, 1, 0, 1), code, sec(11, 1, 3, 0))...), "data segment flags"},
		{"repeated import section", mod(sec(1, 1, 0x60, 0, 0), sec(2, 1, 1, 'e', 1, 'f', 0x00, 0), sec(2, 1, 1, 'e', 1, 'g', 0x00, 0)), "repeated section"},
		{"a recursion group in the type section", mod(sec(1, 1, 0x4e, 0), code), "type form"},
		{"trailing bytes in the export section", mod(append(typeFunc, sec(7, 0, 0), code)...), "end of a section"},
		{"start function 2^32-1", mod(append(typeFunc, sec(8, 0xff, 0xff, 0xff, 0xff, 0x0f), code)...), "function index 4294967295 out of range"},
	} {
		if _, err := InstrumentWith(c.wasm, FlagBudget); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: want ErrUnsupported (%s), got %v", c.name, c.why, err)
		}
	}
	// The module's own global G-1 is fine.
	if _, err := InstrumentWith(mod(append(typeFunc, oneGlobal, sec(7, 1, 1, 'g', 0x03, 0), sec(10, 1, 6, 0, 0x41, 0, 0x24, 0, 0x0b))...), FlagBudget); err != nil {
		t.Errorf("own global: %v", err)
	}
}

// TestInstrumentBudgetOtherIndices: return_call, ref.func in a table
// initialiser (function references) and tail calls are remapped too.
func TestInstrumentBudgetOtherIndices(t *testing.T) {
	// (import "e" "f" (func)) (func $1 (return_call $2)) (func $2 (ref.func $1) drop)
	// (elem declare func $1) (table 1 funcref (ref.func $2))
	wasm := mod(
		sec(1, 1, 0x60, 0, 0),
		sec(2, 1, 1, 'e', 1, 'f', 0x00, 0),
		sec(3, 2, 0, 0),
		sec(4, 1, 0x40, 0x00, 0x70, 0x00, 1, 0xd2, 2, 0x0b),
		sec(9, 1, 3, 0x00, 1, 1),
		sec(10, 2, 4, 0, 0x12, 2, 0x0b, 5, 0, 0xd2, 1, 0x1a, 0x0b),
	)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	// $1 tail-calls at once (a check: 392 + 8 > callSlack); $2 exits
	// owing 394 (> exitSlack): a check before its end.
	f1 := cat([]byte{0}, wantBudgetCheck(0, 1, 392), []byte{0x12, 3, 0x0b})
	f2 := cat([]byte{0, 0xd2, 2, 0x1a}, wantBudgetCheck(0, 1, 394), []byte{0x0b})
	code := append(append(append([]byte{2, byte(len(f1))}, f1...), byte(len(f2))), f2...)
	// Neither function is counted on the stack: $1 only tail-calls (a
	// jump in wazero: () -> () passes nothing on its stack), $2 calls
	// nothing.
	want := mod(
		sec(1, 2, 0x60, 0, 0, 0x60, 0, 0),
		sec(2, append([]byte{2, 1, 'e', 1, 'f', 0x00, 0}, yieldImport(1)...)...),
		sec(3, 2, 0, 0),
		sec(4, 1, 0x40, 0x00, 0x70, 0x00, 1, 0xd2, 3, 0x0b),
		sec(6, cat([]byte{2, 0x7f, 0x01, 0x41, 0x80, 0x80, 0x20, 0x0b}, wantStackGlobal())...),
		sec(7, cat([]byte{1}, wantStackExport(1))...),
		sec(9, 1, 3, 0x00, 1, 2),
		sec(10, code...),
	)
	if !bytes.Equal(out, want) {
		t.Fatalf("got  % x\nwant % x", out, want)
	}
	// wabt 1.0.32 knows tail calls but not table initialisers: validate
	// the module without the table.
	noTable := mod(
		sec(1, 1, 0x60, 0, 0),
		sec(2, 1, 1, 'e', 1, 'f', 0x00, 0),
		sec(3, 2, 0, 0),
		sec(9, 1, 3, 0x00, 1, 1),
		sec(10, 2, 4, 0, 0x12, 2, 0x0b, 5, 0, 0xd2, 1, 0x1a, 0x0b),
	)
	if out, err = InstrumentWith(noTable, FlagBudget); err != nil {
		t.Fatal(err)
	}
	checkBudgetOutput(t, noTable, out)
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		wabtCheckLines(t, out, []string{"--enable-tail-call"}, wantBudgetLines(0, 1))
	}
}

// wantBulkCharge spells out the code after a bulk instruction, with budget
// global g and length local l, independently of bulkCharge (the check
// follows it):
//
//	global.get g; local.get l; i32.const 3; i32.shr_u; i32.sub; global.set g
func wantBulkCharge(g, l uint32) []byte {
	x, y := wasmbin.AppendUint64(nil, uint64(g)), wasmbin.AppendUint64(nil, uint64(l))
	return bytes.Join([][]byte{{0x23}, x, {0x20}, y, {0x41, 3, 0x76, 0x6b, 0x24}, x}, nil)
}

// TestInstrumentBudgetBulk: a function with a bulk memory or table
// instruction gets an i32 local after its parameters and locals, which
// takes the instruction's length (local.tee before it) and charges it to
// the budget (after it, followed by a check); a function without gets no
// local.
func TestInstrumentBudgetBulk(t *testing.T) {
	// (type (func (param i32 i64))) (type (func)) (memory 1) (table 1 funcref)
	// (elem $e func 0) (data $d "")
	// (func $0 (param i32 i64) (local f32 f32 f32) (local i32)
	//   (memory.fill (i32.const 0) (i32.const 0) (i32.const 8192))
	//   (memory.copy (i32.const 0) (i32.const 0) (i32.const 1))
	//   (memory.init $d (i32.const 0) (i32.const 0) (i32.const 0))
	//   (table.fill (i32.const 0) (ref.null func) (i32.const 1))
	//   (table.copy (i32.const 0) (i32.const 0) (i32.const 1))
	//   (table.init $e (i32.const 0) (i32.const 0) (i32.const 1))
	//   (data.drop $d))
	// (func $1 (memory.size) drop)
	const c0 = 0x41
	ops := [][]byte{
		{0xfc, 11, 0},    // memory.fill
		{0xfc, 10, 0, 0}, // memory.copy
		{0xfc, 8, 0, 0},  // memory.init
		{0xfc, 17, 0},    // table.fill
		{0xfc, 14, 0, 0}, // table.copy
		{0xfc, 12, 0, 0}, // table.init
	}
	args := [][]byte{
		{c0, 0, c0, 0, c0, 0x80, 0xc0, 0x00},
		{c0, 0, c0, 0, c0, 1},
		{c0, 0, c0, 0, c0, 0},
		{c0, 0, 0xd0, 0x70, c0, 1},
		{c0, 0, c0, 0, c0, 1},
		{c0, 0, c0, 0, c0, 1},
	}
	locals := []byte{2, 3, 0x7d, 1, 0x7f}
	body0 := append([]byte{}, locals...)
	for i := range ops {
		body0 = append(append(body0, args[i]...), ops[i]...)
	}
	body0 = append(body0, 0xfc, 9, 0, 0x0b) // data.drop 0; end
	body1 := []byte{0, 0x3f, 0, 0x1a, 0x0b}
	code := append(append(append([]byte{2, byte(len(body0))}, body0...), byte(len(body1))), body1...)
	wasm := mod(
		sec(1, 2, 0x60, 2, 0x7f, 0x7e, 0, 0x60, 0, 0),
		sec(3, 2, 0, 1),
		sec(4, 1, 0x70, 0x00, 1),
		sec(5, 1, 0x00, 1),
		sec(9, 1, 1, 0x00, 1, 0),
		sec(12, 1),
		sec(10, code...),
		sec(11, 1, 1, 0),
	)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	checkBudgetOutput(t, wasm, out)
	// G = 0, Y = 0; $0's new local: 2 parameters + 4 locals = 6. $0
	// starts lazily (392); the check after its first bulk instruction
	// charges that, the three operands and the instruction (16) and, the
	// fill being split (bulk.go), splitCost: 507; the copy 3 + 16 + 96,
	// the others 3 + 16. $1 exits owing 394: a check before its end.
	//
	// The fill and the copy are split: the length goes through the local,
	// and if it is over 256 KiB, the helper ($3 for the fill, $4 for the
	// copy, after the yield import and $0, $1) is called instead, with the
	// operands as the parameters of an if of type 3 (i32 i32 i32) -> ()
	// (after the two of the module and the yield's); otherwise the
	// instruction runs and is charged:
	//
	//	local.tee 6; local.get 6; i32.const 262144; i32.gt_u
	//	if (type 3) call $h else <op> <charge> end
	charge := wantBulkCharge(0, 6)
	if !bytes.Equal(charge, bulkCharge(0, 6)) {
		t.Fatalf("bulkCharge: % x", bulkCharge(0, 6))
	}
	want0 := []byte{3, 3, 0x7d, 1, 0x7f, 1, 0x7f}
	for i := range ops {
		switch i {
		case 0, 1: // split
			w := []uint32{507, 115}[i]
			want0 = cat(want0, args[i], []byte{0x22, 6, 0x20, 6, 0x41, 0x80, 0x80, 0x10, 0x4b, 0x04, 3, 0x10, byte(3 + i), 0x05},
				ops[i], charge, []byte{0x0b}, wantBudgetCheck(0, 0, w))
		default:
			want0 = cat(want0, args[i], []byte{0x22, 6}, ops[i], charge, wantBudgetCheck(0, 0, 19))
		}
	}
	want0 = append(want0, 0xfc, 9, 0, 0x0b)
	want1 := cat([]byte{0, 0x3f, 0, 0x1a}, wantBudgetCheck(0, 0, 394), []byte{0x0b})
	// The fill's helper:
	//
	//	(func $3 (param $d i32) (param $v i32) (param $n i32) (local $k i32)
	//	  (if (i64.gt_u (i64.add (i64.extend_i32_u $d) (i64.extend_i32_u $n))
	//	                (i64.shl (i64.extend_i32_u (memory.size)) (i64.const 16)))
	//	    (then (memory.fill $d $v $n) (return)))
	//	  (loop
	//	    the check charging 96
	//	    (local.set $k (select $n (i32.const 262144) (i32.lt_u $n (i32.const 262144))))
	//	    (memory.fill $d $v $k)
	//	    (local.set $d (i32.add $d $k)) (local.set $n (i32.sub $n $k))
	//	    the charge of $k
	//	    (br_if 0 $n)))
	want3 := cat([]byte{1, 1, 0x7f,
		0x20, 0, 0xad, 0x20, 2, 0xad, 0x7c, 0x3f, 0, 0xad, 0x42, 16, 0x86, 0x56,
		0x04, 0x40, 0x20, 0, 0x20, 1, 0x20, 2, 0xfc, 11, 0, 0x0f, 0x0b,
		0x03, 0x40}, wantBudgetCheck(0, 0, 96),
		[]byte{0x20, 2, 0x41, 0x80, 0x80, 0x10, 0x20, 2, 0x41, 0x80, 0x80, 0x10, 0x49, 0x1b, 0x21, 3,
			0x20, 0, 0x20, 1, 0x20, 3, 0xfc, 11, 0,
			0x20, 0, 0x20, 3, 0x6a, 0x21, 0, 0x20, 2, 0x20, 3, 0x6b, 0x21, 2},
		wantBulkCharge(0, 3), []byte{0x20, 2, 0x0d, 0, 0x0b, 0x0b})
	wantCode := cat([]byte{4}, wasmbin.AppendUint64(nil, uint64(len(want0))), want0, []byte{byte(len(want1))}, want1,
		wasmbin.AppendUint64(nil, uint64(len(want3))), want3)
	if !bytes.Contains(out, wantCode) {
		t.Fatalf("code section:\n got % x\nwant % x", out, wantCode)
	}
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		budgetWabtCheck(t, wasm, out)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatal(err)
	}

	// 64-bit memories and tables take an i64 length: refused.
	for name, w := range map[string][]byte{
		"memory64":          mod(sec(5, 1, 0x04, 1)),
		"imported memory64": mod(sec(2, 1, 1, 'e', 1, 'm', 0x02, 0x04, 1)),
		"table64":           mod(sec(4, 1, 0x70, 0x04, 1)),
	} {
		if _, err := InstrumentWith(w, FlagBudget); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "64-bit") {
			t.Errorf("%s: want ErrUnsupported (64-bit), got %v", name, err)
		}
	}
}

// nameSection assembles a "name" custom section from subsections given as
// id then content.
func nameSection(subs ...[]byte) []byte {
	body := append([]byte{4}, "name"...)
	for _, s := range subs {
		body = append(body, s[0])
		body = wasmbin.AppendUint64(body, uint64(len(s)-1))
		body = append(body, s[1:]...)
	}
	return sec(0, body...)
}

// encoded is a section from sec as it appears in a module: id, size, body.
func encoded(s []byte) []byte {
	return append(append([]byte{s[0]}, wasmbin.AppendUint64(nil, uint64(len(s)-1))...), s[1:]...)
}

// TestInstrumentBudgetNames: the name section's function, local and label
// names follow their functions (label indices also move past the checks'
// ifs); the other subsections are copied; a name section with a
// subsection the rewriter does not know, or that does not decode, is
// dropped.
func TestInstrumentBudgetNames(t *testing.T) {
	// (import "e" "f" (func)) (func $a (param i32)
	//   block loop end end loop block end end)
	// (func $b) — labels of $a: 0 block, 1 loop, 2 loop, 3 block.
	base := [][]byte{
		sec(1, 2, 0x60, 0, 0, 0x60, 1, 0x7f, 0),
		sec(2, 1, 1, 'e', 1, 'f', 0x00, 0),
		sec(3, 2, 1, 0),
		sec(10, 2, 14, 0, 0x02, 0x40, 0x03, 0x40, 0x0b, 0x0b, 0x03, 0x40, 0x02, 0x40, 0x0b, 0x0b, 0x0b, 2, 0, 0x0b),
	}
	module := []byte{0, 3, 'm', 'o', 'd'}
	funcs := []byte{1, 3, 0, 1, 'f', 1, 1, 'a', 2, 1, 'b'}
	locals := []byte{2, 1, 1, 1, 0, 1, 'p'}
	labels := []byte{3, 1, 1, 4, 0, 2, 'b', '0', 1, 2, 'l', '1', 2, 2, 'l', '2', 3, 2, 'b', '3'}
	types := []byte{4, 1, 0, 1, 't'}
	wasm := mod(append(base, nameSection(module, funcs, locals, labels, types))...)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	checkBudgetOutput(t, wasm, out)
	// Function 1 becomes 2 and 2 becomes 3; $a's labels ($a starts
	// lazily: its first check is its first loop's): block 0 -> 0, loop
	// 1 -> 1 (its check's if 2), loop 2 -> 3 (its check's if 4), block 3
	// -> 5.
	wantNames := nameSection(module,
		[]byte{1, 3, 0, 1, 'f', 2, 1, 'a', 3, 1, 'b'},
		[]byte{2, 1, 2, 1, 0, 1, 'p'},
		[]byte{3, 1, 2, 4, 0, 2, 'b', '0', 1, 2, 'l', '1', 3, 2, 'l', '2', 5, 2, 'b', '3'},
		types)
	if !bytes.HasSuffix(out, encoded(wantNames)) {
		t.Fatalf("name section:\ngot  % x\nwant % x", out[len(out)-len(encoded(wantNames)):], encoded(wantNames))
	}
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		budgetWabtCheck(t, wasm, out)
	}

	// The module name alone, and no name at all, are copied.
	for _, ns := range [][]byte{nameSection(module), nameSection()} {
		wasm := mod(append(base, ns)...)
		out, err := InstrumentWith(wasm, FlagBudget)
		if err != nil || !bytes.HasSuffix(out, encoded(ns)) {
			t.Fatalf("name section % x not copied: %v", ns, err)
		}
	}

	// Dropped: an unknown subsection; a function name map that does not
	// decode; label names for an imported function; and always a custom
	// section other than "name" (FormatVersion 5), even next to a name
	// section that stays.
	other := sec(0, append([]byte{5}, "other"...)...)
	kept := nameSection(module)
	out, err = InstrumentWith(mod(append(append(base, other), kept)...), FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := customSections(t, out); !slices.Equal(names, []string{"name"}) {
		t.Errorf("custom sections %q, want the name section only", names)
	}
	for _, ns := range [][]byte{
		nameSection(funcs, []byte{12, 0}),
		nameSection([]byte{1, 3, 0, 1}),
		nameSection([]byte{1, 1, 0, 5, 'f'}),
		nameSection([]byte{3, 1, 0, 0}),
		nameSection(append(funcs, 0)), // a byte after the map
	} {
		wasm := mod(append(append(base, ns), other)...)
		out, err := InstrumentWith(wasm, FlagBudget)
		if err != nil {
			t.Fatal(err)
		}
		names, _ := customSections(t, out)
		if len(names) != 0 {
			t.Errorf("name section % x: custom sections %q, want both dropped", ns, names)
		}
	}
}

// TestInstrumentRefTypeBlock: a block type (ref null ht) is two bytes
// (function references); the second, here 0x03, is not an instruction
// (loop) for either mode.
func TestInstrumentRefTypeBlock(t *testing.T) {
	// Four types () -> (); (func block (result (ref null 3)) ref.null 3 end drop)
	wasm := mod(sec(1, 4, 0x60, 0, 0, 0x60, 0, 0, 0x60, 0, 0, 0x60, 0, 0), sec(3, 1, 0),
		sec(10, 1, 9, 0, 0x02, 0x63, 0x03, 0xd0, 0x03, 0x0b, 0x1a, 0x0b))
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		out, err := InstrumentWith(wasm, f)
		if err != nil {
			t.Fatal(err)
		}
		var check []byte
		switch f {
		case FlagMemory:
			check = wantMemoryCheck(0)
		case FlagBudget:
			check = wantBudgetCheck(0, 0, 394) // at the exit: 392 + ref.null + drop
		}
		if n := bytes.Count(out, check); n != 1 {
			t.Errorf("flag %d: %d checks, want 1 (the exit's)", f, n)
		}
	}
}

// ---- FlagBudget in wazero ----

// errStop is what the test's yield function panics with to stop a call.
var errStop = errors.New("interrupt test: stopped by the yield function")

// budgetModule instantiates testdata/budget.wasm instrumented in FlagBudget
// mode, with a yield function that counts its calls in *yields and panics
// with errStop once *stop is set.
func budgetModule(ctx context.Context, t *testing.T, yields *atomic.Int64, stop *atomic.Bool) api.Module {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("testdata", "budget.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	_, err = r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(func() {
		yields.Add(1)
		if stop.Load() {
			panic(errStop)
		}
	}).Export(YieldName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Instantiate(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// budgetModel replays what a sequence of checks and bulk charges does to
// the budget global, independently of the instrumented code: a check
// charging w subtracts w and, below 1, resets the budget and yields.
type budgetModel struct{ g, yields int64 }

func newBudgetModel() *budgetModel { return &budgetModel{g: Budget} }

func (m *budgetModel) check(w int64) {
	if m.g -= w; m.g < 1 {
		m.g = Budget
		m.yields++
	}
}

func (m *budgetModel) bulk(n int64) { m.g -= n >> bulkShift }

// TestBudgetYieldPeriod: the guest yields when the units its checks charge
// add up to Budget. sum(n) starts lazily and owes its caller callSlack +
// costCall = 392 units, which a check before its loop charges (the loop's
// back edge costs far less); the loop header charges the 12 instructions
// of an iteration, n times.
func TestBudgetYieldPeriod(t *testing.T) {
	ctx := context.Background()
	var yields atomic.Int64
	var stop atomic.Bool
	m := budgetModule(ctx, t, &yields, &stop)
	sum := m.ExportedFunction("sum")
	const n = 3 * Budget / 4
	wantSum := uint32(uint64(n) * (n - 1) / 2 % (1 << 32))
	model := newBudgetModel()
	for call := range 3 {
		model.check(int64(callSlack) + costCall)
		for range n {
			model.check(12)
		}
		res, err := sum.Call(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if got := uint32(res[0]); got != wantSum {
			t.Fatalf("sum(%d) = %d", n, got)
		}
		if got := yields.Load(); got != model.yields {
			t.Fatalf("after call %d, %d yields, want %d", call+1, got, model.yields)
		}
	}
	t.Logf("%d yields", model.yields)
}

// TestBudgetBulkCharge: a memory.fill charges the budget one unit per
// 1<<bulkShift bytes of its length, then a check runs: the yields are those
// of a model of the budget, and a loop of large fills yields every few
// fills. fill(n, k): a check before the loop (392, as in sum), then k times
// the header's (the 5 instructions of the back edge), the fill's charge and
// the check after it (the 3 operands, the fill, 16, and its split's
// splitCost); a fill longer than bulkChunk runs a check (splitCost) before
// each of its pieces, and charges each.
func TestBudgetBulkCharge(t *testing.T) {
	ctx := context.Background()
	var yields atomic.Int64
	var stop atomic.Bool
	m := budgetModule(ctx, t, &yields, &stop)
	fill := m.ExportedFunction("fill")
	model := newBudgetModel()
	for _, c := range []struct{ n, k int64 }{{100, 1000}, {4096, 1000}, {5000, 3000}, {bulkChunk, 300}, {bulkChunk + 1, 300},
		{1 << 20, 100}, {16 << 20, 10}, {0, Budget / 4}} {
		model.check(int64(callSlack) + costCall)
		for i := int64(0); i < c.k; i++ {
			model.check(5)
			if c.n <= bulkChunk {
				model.bulk(c.n)
			} else { // in pieces, a check before each, each charged (bulk.go)
				for left := c.n; left > 0; left -= min(left, bulkChunk) {
					model.check(splitCost)
					model.bulk(min(left, bulkChunk))
				}
			}
			model.check(3 + costBulk + splitCost)
		}
		if _, err := fill.Call(ctx, uint64(c.n), uint64(c.k)); err != nil {
			t.Fatal(err)
		}
		if got := yields.Load(); got != model.yields {
			t.Fatalf("after fill(%d, %d): %d yields, want %d", c.n, c.k, got, model.yields)
		}
	}
	t.Logf("%d yields", model.yields)
}

// spin calls an infinite loop (export name) in a goroutine; the returned
// channel gets its error.
func spin(ctx context.Context, m api.Module, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := m.ExportedFunction(name).Call(ctx)
		done <- err
	}()
	return done
}

// waitStopped waits up to a second for the spinning call to end with
// errStop.
func waitStopped(t *testing.T, done <-chan error, since time.Time) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, errStop) {
			t.Fatalf("the call ended with %v, want errStop", err)
		}
		t.Logf("stopped %v after the flag: %v", time.Since(since), strings.SplitN(err.Error(), "\n", 2)[0])
	case <-time.After(time.Second):
		t.Fatal("the call did not stop within a second of the flag")
	}
}

// TestBudgetStopsLoop: the host stops an infinite loop from another
// goroutine by setting its own flag, which the yield function reads.
// The loop of whole-memory fills yields every few fills (were fills not
// charged by their length, every 2^19 / 19 fills: half a minute).
func TestBudgetStopsLoop(t *testing.T) {
	for _, loop := range []string{"spin", "fillspin"} {
		t.Run(loop, func(t *testing.T) {
			ctx := context.Background()
			var yields atomic.Int64
			var stop atomic.Bool
			m := budgetModule(ctx, t, &yields, &stop)
			done := spin(ctx, m, loop)
			time.Sleep(100 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("the loop returned: %v", err)
			default:
			}
			set := time.Now()
			stop.Store(true)
			waitStopped(t, done, set)
			if yields.Load() < 2 {
				t.Fatalf("%d yields", yields.Load())
			}
		})
	}
}

// TestRealTimeBudgetGCDoesNotHang: a garbage collection started while the guest
// spins completes, because the guest yields to Go (a safe point) every
// Budget units. Before FlagBudget, stop-the-world waited for the spinning
// goroutine forever, and the goroutine that would have stopped it was
// stopped too. Nothing inside a hung process can report the hang (every
// goroutine, timers included, is stopped), so the test runs in a child
// process that the parent kills after 10s.
func TestRealTimeBudgetGCDoesNotHang(t *testing.T) {
	if os.Getenv("WASMPROV_INTERRUPT_GC_CHILD") == "1" {
		budgetGCChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRealTimeBudgetGCDoesNotHang$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "WASMPROV_INTERRUPT_GC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child hung (a garbage collection waiting for the guest?), killed after 10s:\n%s", out)
	}
	if err != nil || !bytes.Contains(out, []byte("GC returned")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "budget_test.go") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

func budgetGCChild(t *testing.T) {
	// Should the parent's kill not come, a second net: it fires unless
	// the whole process is stopped.
	defer time.AfterFunc(9*time.Second, func() { panic("GC hung") }).Stop()
	for _, loop := range []string{"spin", "fillspin"} {
		ctx := context.Background()
		var yields atomic.Int64
		var stop atomic.Bool
		m := budgetModule(ctx, t, &yields, &stop)
		done := spin(ctx, m, loop)
		for yields.Load() == 0 { // the guest is in its loop
			time.Sleep(time.Millisecond)
		}
		// Milliseconds when the machine is idle; a loaded machine (a
		// fuzzer on the other core) has taken half a second. Within a
		// second at best of three, and each within 5s, catches the hang
		// without flaking.
		best := time.Hour
		for i := 0; i < 3; i++ {
			start := time.Now()
			runtime.GC()
			d := time.Since(start)
			if d > 5*time.Second {
				t.Fatalf("%s: runtime.GC took %v", loop, d)
			}
			best = min(best, d)
			t.Logf("%s: GC returned in %v while the guest loops (%d yields)", loop, d, yields.Load())
		}
		if best > time.Second {
			t.Fatalf("%s: runtime.GC took %v at best", loop, best)
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the loop returned: %v", loop, err)
		default:
		}
		set := time.Now()
		stop.Store(true)
		waitStopped(t, done, set)
	}
}

// TestBudgetRemap runs testdata/remap.wasm before and after FlagBudget
// instrumentation: every export returns the same results, so calls,
// tables, ref.func, the start function and exports reach the same
// functions, and wazero's function names (from the name section), parameter
// names and a trap's stack trace name the same functions.
func TestBudgetRemap(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(filepath.Join("testdata", "remap.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	checkBudgetOutput(t, wasm, out)
	if _, err := exec.LookPath("wasm-validate"); err == nil {
		budgetWabtCheck(t, wasm, out)
	}
	var yields atomic.Int64
	instantiate := func(wasm []byte) api.Module {
		r := wazero.NewRuntime(ctx)
		t.Cleanup(func() { r.Close(ctx) })
		_, err := r.NewHostModuleBuilder("env").NewFunctionBuilder().WithFunc(func(a, b int32) int32 { return a + b }).Export("add").Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(func() { yields.Add(1) }).Export(YieldName).Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("remap"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	orig, inst := instantiate(wasm), instantiate(out)
	type call struct {
		export string
		args   []uint64
		want   []uint64 // nil: an error
	}
	calls := []call{
		{"direct", nil, []uint64{8}},
		{"indirect", []uint64{0}, []uint64{7}},
		{"indirect", []uint64{1}, []uint64{8}},
		{"indirect", []uint64{2}, []uint64{9}},
		{"indirect", []uint64{3}, nil}, // null
		{"indirect1", []uint64{0}, []uint64{8}},
		{"indirect1", []uint64{1}, []uint64{10}},
		{"indirect1", []uint64{2}, nil}, // null
		{"passive", []uint64{0}, []uint64{7}},
		{"passive", []uint64{1}, []uint64{9}},
		{"host", nil, []uint64{5}},
		{"started", nil, []uint64{100}},
		{"reffunc", nil, []uint64{10}},
		{"globalref", nil, []uint64{9}},
		{"loop", []uint64{3 * Budget}, []uint64{7 * 3 * Budget}},
		{"seven", nil, []uint64{7}},
		{"trap", nil, nil},
	}
	for _, c := range calls {
		fo, fi := orig.ExportedFunction(c.export), inst.ExportedFunction(c.export)
		wantRes, wantErr := fo.Call(ctx, c.args...)
		gotRes, gotErr := fi.Call(ctx, c.args...)
		if c.want == nil {
			if wantErr == nil || gotErr == nil || gotErr.Error() != wantErr.Error() {
				t.Errorf("%s%v: error %v, want %v", c.export, c.args, gotErr, wantErr)
			}
		} else if wantErr != nil || gotErr != nil || !slices.Equal(wantRes, c.want) || !slices.Equal(gotRes, c.want) {
			t.Errorf("%s%v: instrumented %v %v, original %v %v, want %v", c.export, c.args, gotRes, gotErr, wantRes, wantErr, c.want)
		}
		do, di := fo.Definition(), fi.Definition()
		if di.Name() != do.Name() || !slices.Equal(di.ParamNames(), do.ParamNames()) || !slices.Equal(di.ExportNames(), do.ExportNames()) {
			t.Errorf("%s: name %q params %q exports %q, want %q %q %q", c.export, di.Name(), di.ParamNames(), di.ExportNames(), do.Name(), do.ParamNames(), do.ExportNames())
		}
	}
	for export, name := range map[string]string{"direct": "f_direct", "indirect": "f_indirect", "seven": "seven", "trap": "f_trap"} {
		if got := inst.ExportedFunction(export).Definition().Name(); got != name {
			t.Errorf("export %s is named %q, want %q", export, got, name)
		}
	}
	if got := inst.ExportedFunction("indirect").Definition().ParamNames(); !slices.Equal(got, []string{"slot"}) {
		t.Errorf("indirect's parameters are named %q", got)
	}
	_, err = inst.ExportedFunction("trap").Call(ctx)
	if err == nil || !strings.Contains(err.Error(), "remap.trap_inner()\n\tremap.f_trap()") {
		t.Errorf("the trap's stack trace does not name trap_inner then f_trap: %v", err)
	}
	// loop(3*Budget) made over 3*Budget checks.
	if n := yields.Load(); n < 3 {
		t.Errorf("%d yields", n)
	}
}

// BenchmarkLoopCheck: the cost of the check on a tight loop (sum(1e7), one
// check per iteration) in wazero's compiler, uninstrumented and in
// FlagBudget mode (wazero, without multi-memory, cannot run FlagMemory's
// output for a module with a memory).
func BenchmarkLoopCheck(b *testing.B) {
	ctx := context.Background()
	wasm, err := os.ReadFile(filepath.Join("testdata", "budget.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000_000
	for _, c := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{
		{"none", func(b []byte) ([]byte, error) { return b, nil }},
		{"FlagBudget", func(b []byte) ([]byte, error) { return InstrumentWith(b, FlagBudget) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			out, err := c.f(wasm)
			if err != nil {
				b.Fatal(err)
			}
			r := wazero.NewRuntime(ctx)
			defer r.Close(ctx)
			if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(func() {}).Export(YieldName).Instantiate(ctx); err != nil {
				b.Fatal(err)
			}
			m, err := r.Instantiate(ctx, out)
			if err != nil {
				b.Fatal(err)
			}
			sum := m.ExportedFunction("sum")
			b.ResetTimer()
			for b.Loop() {
				if _, err := sum.Call(ctx, n); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
		})
	}
}

// TestInstrumentMisreadNameSection: wazero reads a name section's module,
// function and local names by their content, not their subsection sizes;
// a subsection that claims more bytes than the section has left makes it
// read on to the end of the module. The original compiles (the section is
// last); both modes drop such a section rather than append sections after
// it that wazero would then misread (found by FuzzInstrument). A
// well-formed name section is kept byte for byte.
func TestInstrumentMisreadNameSection(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	// Module name "m" in a subsection that claims 48 bytes.
	bad := mod(sec(1, 1, 0x60, 0, 0), sec(3, 1, 0), sec(10, 1, 2, 0, 0x0b), sec(0, 4, 'n', 'a', 'm', 'e', 0, 48, 1, 'm'))
	good, err := os.ReadFile(filepath.Join("testdata", "remap.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	_, goodBodies := customSections(t, good)
	if _, err := r.CompileModule(ctx, bad); err != nil {
		t.Fatalf("wazero no longer accepts the original: %v", err)
	}
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		out, err := InstrumentWith(bad, f)
		if err != nil {
			t.Fatal(err)
		}
		if names, _ := customSections(t, out); len(names) != 0 {
			t.Errorf("flag %d: the name section was kept", f)
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Errorf("flag %d: %v", f, err)
		}
		if f == FlagBudget {
			continue // it rewrites function indices in names
		}
		out, err = InstrumentWith(good, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, bodies := customSections(t, out); len(bodies) != 1 || !bytes.Equal(bodies[0], goodBodies[0]) {
			t.Errorf("flag %d: a well-formed name section changed", f)
		}
	}
}

// TestInstrumentOverlongNameSection: a name section whose numbers are LEB128
// longer than their type allows (here a module-name subsection's size, 2,
// in 6 bytes, where a u32 takes at most 5) is dropped by both modes, as one
// that does not decode; a well-formed one is kept
// (TestInstrumentMisreadNameSection). Before FormatVersion 4 the rewriter
// read such numbers as 64-bit and kept the section: FlagMemory copied it,
// into an output wazero refuses, and FlagBudget re-encoded it.
func TestInstrumentOverlongNameSection(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	names := []byte{4, 'n', 'a', 'm', 'e', 0, 0x82, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 'm'}
	wasm := mod(sec(1, 1, 0x60, 0, 0), sec(3, 1, 0), sec(10, 1, 2, 0, 0x0b), sec(0, names...))
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		out, err := InstrumentWith(wasm, f)
		if err != nil {
			t.Fatalf("flag %d: %v", f, err)
		}
		if names, _ := customSections(t, out); len(names) != 0 {
			t.Errorf("flag %d: the name section was kept", f)
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Errorf("flag %d: %v", f, err)
		}
	}
}
