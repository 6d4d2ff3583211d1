package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// addition is the items the rewrite appends to a section's vector,
// creating the section in its place if the module has none.
type addition struct {
	id    byte
	items [][]byte
}

// vec is the section of the items alone.
func (a addition) vec() []byte {
	out := wasmbin.AppendUint64(nil, uint64(len(a.items)))
	for _, it := range a.items {
		out = append(out, it...)
	}
	return out
}

func instrumentWith(wasm []byte, f Flag, o options) (out []byte, rep report, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(decodeError); ok {
				out, err = nil, fmt.Errorf("%w: %s", ErrUnsupported, string(e))
				return
			}
			panic(r)
		}
	}()
	if f != FlagMemory && f != FlagBudget {
		fail(fmt.Sprintf("unknown flag kind %d", f))
	}
	m := decode(wasm)
	checkExportNames(m.exports, f)

	// The rewriter and the items the rewrite adds.
	var w rewriter
	var adds []addition
	if f == FlagMemory {
		adds = w.initMemory(m)
	} else {
		adds = w.initBudget(m, o)
	}
	w.params = make([]uint32, len(m.funcTypes))
	w.results = make([][]byte, len(m.funcTypes))
	for i, t := range m.funcTypes {
		if uint64(t) >= uint64(len(m.sigs)) {
			fail(fmt.Sprintf("type index %d out of range", t))
		}
		w.params[i], w.results[i] = m.sigs[t].params, m.sigs[t].bt
	}
	w.place.w = &w
	if f == FlagMemory {
		if m.have[wasmbin.SectionIDData] {
			w.checkData(m.body(wasmbin.SectionIDData))
		}
		w.checkFunctionIndices(m)
	}
	w.bulk.data, w.bulk.dataCount = m.body(wasmbin.SectionIDData), m.have[wasmbin.SectionIDDataCount]
	// The code first: it says which helpers the other sections declare
	// (bulk.go).
	var code []byte
	if m.have[wasmbin.SectionIDCode] {
		code = w.instrumentCode(m.body(wasmbin.SectionIDCode))
	}
	if len(w.bulk.keys) > 0 {
		funcs, bodies := make([][]byte, len(w.bulk.keys)), make([][]byte, len(w.bulk.keys))
		for i, k := range w.bulk.keys {
			funcs[i] = wasmbin.AppendUint64(nil, uint64(w.bulk.typ))
			bodies[i] = w.helperBody(k)
		}
		adds = addItems(adds, wasmbin.SectionIDType, splitType)
		adds = addItems(adds, wasmbin.SectionIDFunction, funcs...)
		adds = addItems(adds, wasmbin.SectionIDCode, bodies...)
	}
	outSecs := w.rewrite(m, adds, code)
	out = append(make([]byte, 0, len(wasm)+len(wasm)/8), wasm[:8]...)
	for _, s := range outSecs {
		out = append(out, s.id)
		out = wasmbin.AppendUint64(out, uint64(len(s.body)))
		out = append(out, s.body...)
	}
	return out, report{stats: w.place.stats, frames: w.frames}, nil
}

// initMemory makes w FlagMemory's rewriter of m and returns the items it
// adds: the flag's memory and its export.
func (w *rewriter) initMemory(m *module) []addition {
	mem := uint64(m.imports.memories) + uint64(m.memories)
	if mem >= noLimit {
		fail("too many memories")
	}
	if m.imports.mem64 || (m.have[wasmbin.SectionIDMemory] && hasLimits64(wasmbin.SectionIDMemory, m.body(wasmbin.SectionIDMemory))) {
		// Their bulk instructions take i64 operands, which the helpers
		// (bulk.go) do not.
		fail("64-bit memory indices")
	}
	funcs := uint64(m.imports.funcs) + uint64(len(m.funcTypes))
	if funcs >= noLimit || uint64(len(m.sigs)) >= noLimit {
		fail("too many functions or types")
	}
	*w = rewriter{globals: noLimit, memories: mem, funcs: funcs,
		bulk: bulkHelpers{typ: uint32(len(m.sigs)), first: uint32(funcs)}}
	w.check = memoryCheck(uint32(mem))
	w.checkExportedMemories(m.exports)
	return []addition{
		{wasmbin.SectionIDMemory, [][]byte{{wasmbin.LimitsHasMax, 1, 1}}}, // limits min 1 max 1
		{wasmbin.SectionIDExport, [][]byte{exportEntry(MemoryName, wasmbin.ExternMemory, uint32(mem))}},
	}
}

// initBudget makes w FlagBudget's rewriter of m, with o's limits, and
// returns the items it adds: the yield's type and import, the budget and
// stack globals, the stack global's export, and the types of the blocks
// around the bodies of functions with several results.
func (w *rewriter) initBudget(m *module, o options) []addition {
	if m.have[wasmbin.SectionIDTable] && hasLimits64(wasmbin.SectionIDTable, m.body(wasmbin.SectionIDTable)) {
		fail("64-bit table indices")
	}
	if m.have[wasmbin.SectionIDMemory] && hasLimits64(wasmbin.SectionIDMemory, m.body(wasmbin.SectionIDMemory)) {
		fail("64-bit memory indices")
	}
	if m.imports.yield {
		fail("the module already imports from " + YieldModule)
	}
	if m.imports.limits64 {
		fail("64-bit memory or table indices")
	}
	types := uint32(len(m.sigs))
	g := uint64(m.imports.globals) + uint64(m.globals)
	if g >= noLimit || uint64(types) >= noLimit-1 {
		fail("too many globals or types")
	}
	if o.stack < 1 {
		fail("stack limit below 1")
	}
	funcs := uint64(m.imports.funcs) + uint64(len(m.funcTypes))
	if funcs >= noLimit-1 {
		fail("too many functions")
	}
	*w = rewriter{globals: g, memories: noLimit, remap: true, yield: m.imports.funcs, budget: o.budget,
		depth: true, stack: uint32(g) + 1, stackLimit: o.stack, funcs: funcs}
	yield := append(wasmbin.AppendUint64(nil, uint64(len(YieldModule))), YieldModule...)
	yield = append(wasmbin.AppendUint64(yield, uint64(len(YieldName))), YieldName...)
	wrap := wrapTypes(m.sigs, types+1)
	if uint64(types)+1+uint64(len(wrap.items))+1 >= noLimit {
		fail("too many types")
	}
	// The helpers' type after the wraps', the helpers after every
	// function (the yield import included).
	w.bulk = bulkHelpers{typ: types + 1 + uint32(len(wrap.items)), first: uint32(funcs) + 1}
	adds := []addition{
		{wasmbin.SectionIDType, append([][]byte{{wasmbin.TypeFormFunc, 0, 0}}, wrap.items...)},                      // (func), then the wraps' types
		{wasmbin.SectionIDImport, [][]byte{wasmbin.AppendUint64(append(yield, wasmbin.ExternFunc), uint64(types))}}, // (import YieldModule YieldName (func (type T)))
		{wasmbin.SectionIDGlobal, [][]byte{mutableI32(o.budget), mutableI32(o.stack)}},
		{wasmbin.SectionIDExport, [][]byte{exportEntry(StackName, wasmbin.ExternGlobal, uint32(g)+1)}},
	}
	for i := range m.sigs {
		if bt, ok := wrap.bt[i]; ok {
			m.sigs[i].bt = bt
		}
	}
	w.sigs = m.sigs
	w.funcTypes = append(m.imports.funcTypes[:len(m.imports.funcTypes):len(m.imports.funcTypes)], m.funcTypes...)
	return adds
}

// addItems adds items to the addition to section id, creating it in the
// binary's order of sections if there is none.
func addItems(adds []addition, id byte, items ...[]byte) []addition {
	for i := range adds {
		if adds[i].id == id {
			adds[i].items = append(adds[i].items, items...)
			return adds
		}
	}
	i := 0
	for i < len(adds) && !after(adds[i].id, id) {
		i++
	}
	return append(adds[:i], append([]addition{{id, items}}, adds[i:]...)...)
}

// rewrite returns m's sections rewritten, with code as the code section's
// body and the additions: appended to the sections the module has, or in
// sections of their own in the binary's order.
func (w *rewriter) rewrite(m *module, adds []addition, code []byte) []section {
	var outSecs []section
	inserted := make([]bool, len(adds))
	for _, s := range m.secs {
		// Sections that must come after the sections of added items the
		// module lacks.
		for i, a := range adds {
			if !inserted[i] && !m.have[a.id] && after(s.id, a.id) {
				outSecs = append(outSecs, section{a.id, a.vec()})
				inserted[i] = true
			}
		}
		if w.remap {
			s.body = w.remapSection(m, s)
		}
		if s.id == wasmbin.SectionIDCode {
			s.body = code
		}
		for i, a := range adds {
			if s.id == a.id {
				s.body = appendToVec(s.body, a.items...)
				inserted[i] = true
			}
		}
		if s.id == wasmbin.SectionIDData && !m.have[wasmbin.SectionIDDataCount] {
			s.body = mergeData(s.body)
		}
		outSecs = append(outSecs, s)
	}
	for i, a := range adds {
		if !inserted[i] {
			outSecs = append(outSecs, section{a.id, a.vec()})
		}
	}
	outSecs = dropCustomSections(outSecs)
	if w.remap {
		// After the code section, wherever the name section is: label
		// names need the checks instrumentCode inserted.
		outSecs = w.remapNameSections(outSecs)
	} else {
		outSecs = dropMisreadNames(outSecs)
	}
	return outSecs
}

// memoryCheck is the FlagMemory check for flag memory m:
//
//	i32.const 0; i32.load align=2 memidx=m offset=0; if unreachable end
//
// With m == 0 the memarg is the plain one (flags 2, offset 0); otherwise
// bit 6 of the flags says a memory index follows them.
func memoryCheck(m uint32) []byte {
	const align = 2 // 2^2 bytes
	check := []byte{wasmbin.OpcodeI32Const, 0, wasmbin.OpcodeI32Load}
	if m == 0 {
		check = append(check, align)
	} else {
		check = wasmbin.AppendUint64(append(check, align|wasmbin.MemArgMemIdx), uint64(m))
	}
	return append(check, 0, // offset
		wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty, wasmbin.OpcodeUnreachable, wasmbin.OpcodeEnd)
}

// mutableI32 is a global section entry: (mut i32) (i32.const v).
func mutableI32(v int32) []byte {
	const mutable = 1
	g := wasmbin.AppendInt64([]byte{wasmbin.ValueTypeI32, mutable, wasmbin.OpcodeI32Const}, int64(v))
	return append(g, wasmbin.OpcodeEnd)
}

func exportEntry(name string, kind byte, idx uint32) []byte {
	e := append(append(wasmbin.AppendUint64(nil, uint64(len(name))), name...), kind)
	return wasmbin.AppendUint64(e, uint64(idx))
}

// after reports whether a section with id must follow section want in the
// binary's order (custom sections go anywhere).
func after(id, want byte) bool {
	order := map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}
	if id == wasmbin.SectionIDCustom {
		return false
	}
	o, ok := order[id]
	if !ok {
		fail(fmt.Sprintf("unknown section id %d", id))
	}
	return o > order[want]
}

func appendToVec(body []byte, items ...[]byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n)+uint64(len(items)))
	out = append(out, body[r.pos():]...)
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// rewriter rewrites function bodies and checks every index of the kind the
// rewrite adds: an index at or beyond the module's own count could not be
// used by the original module, but would reach the added flag after the
// rewrite.
type rewriter struct {
	// check: FlagMemory's check (FlagBudget's depends on what it
	// charges: appendCheck).
	check []byte
	// charge (FlagBudget): the code after a bulk instruction, which
	// charges its length (in bulkLocal) to the budget.
	charge []byte
	// globals and memories: the lowest index that is refused, noLimit
	// for a kind the rewrite adds nothing to; funcs: the module's
	// functions (the helpers come after them: bulk.go).
	globals, memories, funcs uint64
	// bulk: the helpers of the bulk memory instructions split (bulk.go).
	bulk bulkHelpers
	// remap (FlagBudget): the yield import takes function index yield,
	// so every function index from yield up moves up by one.
	remap bool
	yield uint32
	// ords (FlagBudget), for each defined function, the ord of each
	// check inserted in it, in order (see edit): label names move by the
	// checks inserted before them. curOrds: the function being copied.
	ords    [][]uint32
	curOrds []uint32
	// place: the check placement.
	place placer
	// results: each defined function's result block type (nil for
	// several results).
	results [][]byte
	// params: each defined function's parameter count.
	// bulkLocal: the index of the i32 local the function being copied gets
	// if it has a bulk instruction (usedBulk) it charges (FlagBudget) or
	// splits (bulk.go), for its length.
	params    []uint32
	bulkLocal uint32
	usedBulk  bool
	// budget (FlagBudget): the budget a yield resets (Budget).
	budget int32
	// The stack bound (FlagBudget: depth; stack.go): the counter's global
	// index and initial value; the module's types, and the type of each
	// function (imported ones first).
	depth      bool
	stack      uint32
	stackLimit int32
	sigs       []sig
	funcTypes  []uint32
	frames     []int32       // report.frames
	frame      frameAnalysis // place.sizeFrame's
	body       []byte        // scratch
}

// instrumentCode rewrites the code section, placing the checks as place.go
// says.
func (w *rewriter) instrumentCode(body []byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := append(make([]byte, 0, len(body)+len(body)/8), wasmbin.AppendUint64(nil, uint64(n))...)
	var fn []byte
	for d := 0; n > 0; n, d = n-1, d+1 {
		size := r.u32()
		fr := newReader(r.bytes(int(size)))
		fn = fn[:0]
		// Locals.
		groups := fr.u32()
		groupsEnd := fr.pos()
		var locals uint64
		v128 := false
		for l := groups; l > 0; l-- {
			locals += uint64(fr.u32())
			v128 = fr.valType() == wasmbin.ValueTypeV128 || v128
		}
		if w.remap {
			fn = w.instrumentBudgetFunction(d, fr, groups, groupsEnd, locals, v128, fn)
		} else {
			fn = w.instrumentMemoryFunction(d, fr, groups, groupsEnd, locals, fn)
		}
		out = wasmbin.AppendUint64(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	return out
}

// instrumentMemoryFunction copies function body d (fr after its locals:
// groups local groups declaring locals locals, the groups from groupsEnd)
// with its checks placed (place.go); if it splits a bulk instruction
// (bulk.go), it gets an i32 local, after the others, for its length.
func (w *rewriter) instrumentMemoryFunction(d int, fr *reader, groups uint32, groupsEnd int, locals uint64, fn []byte) []byte {
	if d >= len(w.results) {
		fail("more function bodies than functions")
	}
	l := uint64(w.params[d]) + locals
	w.bulkLocal, w.usedBulk = uint32(l), false
	localsEnd := fr.pos()
	code := fr.b[localsEnd:]
	w.place.placeFunction(code, w.results[d])
	if w.usedBulk && (l >= 1<<32-1 || groups == 1<<32-1) {
		fail("too many locals")
	}
	w.body = w.place.emit(code, w.body[:0])
	fn = appendLocals(fn, fr.b, groups, groupsEnd, localsEnd, w.usedBulk, false)
	return append(fn, w.body...)
}

// appendLocals appends a function's local declarations (b[:localsEnd],
// groups groups from groupsEnd) with an i32 local after them if bulk, and
// a second if saved.
func appendLocals(fn, b []byte, groups uint32, groupsEnd, localsEnd int, bulk, saved bool) []byte {
	if !bulk && !saved {
		return append(fn, b[:localsEnd]...)
	}
	k := byte(1)
	if saved {
		k = 2 // the first is the bulk local, used or not
	}
	fn = wasmbin.AppendUint64(fn, uint64(groups)+1)
	fn = append(fn, b[groupsEnd:localsEnd]...)
	return append(fn, k, wasmbin.ValueTypeI32) // (local i32) or (local i32 i32)
}
