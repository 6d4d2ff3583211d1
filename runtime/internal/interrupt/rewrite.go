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
	budget := o.budget
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
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || wasm[4] != 1 || wasm[5] != 0 || wasm[6] != 0 || wasm[7] != 0 {
		fail("not a WebAssembly 1.0 binary")
	}
	r := &reader{b: wasm, pos: 8}
	var secs []section
	for !r.done() {
		id := r.byte()
		n := r.u32()
		secs = append(secs, section{id, r.bytes(int(n))})
	}
	var imported imports
	var types, definedGlobals, definedMemories uint32
	var funcTypes []uint32
	var sigs []sig
	have := map[byte]bool{}
	for _, s := range secs {
		if s.id != secCustom && have[s.id] {
			// One count per section: a second would shift the added
			// indices under the first, or the types under the functions.
			fail(fmt.Sprintf("repeated section %d", s.id))
		}
		have[s.id] = true
		switch s.id {
		case secType:
			sigs = funcTypeInfo(s.body)
			types = uint32(len(sigs))
		case secFunction:
			funcTypes = readU32Vec(s.body)
		case secTable:
			if f == FlagBudget && hasLimits64(s.id, s.body) {
				fail("64-bit table indices")
			}
		case secImport:
			imported = countImports(s.body)
		case secGlobal:
			definedGlobals = (&reader{b: s.body}).u32()
		case secMemory:
			if f == FlagMemory {
				definedMemories = (&reader{b: s.body}).u32()
			}
			if f == FlagBudget && hasLimits64(s.id, s.body) {
				fail("64-bit memory indices")
			}
		case secExport:
			checkExportName(s.body, f)
		}
	}

	// The rewriter and the items the rewrite adds.
	var w rewriter
	var adds []addition
	switch f {
	case FlagMemory:
		m := uint64(imported.memories) + uint64(definedMemories)
		if m >= noLimit {
			fail("too many memories")
		}
		w = rewriter{globals: noLimit, memories: m}
		w.check = memoryCheck(uint32(m))
		adds = []addition{
			{secMemory, [][]byte{{0x01, 0x01, 0x01}}}, // limits min 1 max 1
			{secExport, [][]byte{exportEntry(MemoryName, kindMemory, uint32(m))}},
		}
		for _, s := range secs {
			if s.id == secExport {
				w.checkExportedMemories(s.body)
			}
		}
	case FlagBudget:
		if imported.yield {
			fail("the module already imports from " + YieldModule)
		}
		if imported.limits64 {
			fail("64-bit memory or table indices")
		}
		g := uint64(imported.globals) + uint64(definedGlobals)
		if g >= noLimit || uint64(types) >= noLimit-1 {
			fail("too many globals or types")
		}
		if o.stack < 1 {
			fail("stack limit below 1")
		}
		w = rewriter{globals: g, memories: noLimit, remap: true, yield: imported.funcs, budget: budget,
			depth: true, stack: uint32(g) + 1, stackLimit: o.stack}
		yield := append(append(append(wasmbin.AppendUint64(nil, uint64(len(YieldModule))), YieldModule...), wasmbin.AppendUint64(nil, uint64(len(YieldName)))...), YieldName...)
		wrap := wrapTypes(sigs, types+1)
		if uint64(types)+1+uint64(len(wrap.items)) >= noLimit {
			fail("too many types")
		}
		adds = []addition{
			{secType, append([][]byte{{0x60, 0x00, 0x00}}, wrap.items...)},                                  // (func), then the wraps' types
			{secImport, [][]byte{append(append(yield, 0x00), wasmbin.AppendUint64(nil, uint64(types))...)}}, // (import YieldModule YieldName (func (type T)))
			{secGlobal, [][]byte{append(append([]byte{0x7f, 0x01, 0x41}, wasmbin.AppendInt64(nil, int64(budget))...), 0x0b), // (mut i32) (i32.const Budget)
				append(append([]byte{0x7f, 0x01, 0x41}, wasmbin.AppendInt64(nil, int64(o.stack))...), 0x0b)}}, // (mut i32) (i32.const StackLimit)
			{secExport, [][]byte{exportEntry(StackName, kindGlobal, uint32(g)+1)}},
		}
		for i := range sigs {
			if bt, ok := wrap.bt[i]; ok {
				sigs[i].bt = bt
			}
		}
		w.sigs = sigs
		w.funcTypes = append(imported.funcTypes[:len(imported.funcTypes):len(imported.funcTypes)], funcTypes...)
	}

	w.params = make([]uint32, len(funcTypes))
	w.results = make([][]byte, len(funcTypes))
	for i, t := range funcTypes {
		if uint64(t) >= uint64(len(sigs)) {
			fail(fmt.Sprintf("type index %d out of range", t))
		}
		w.params[i], w.results[i] = sigs[t].params, sigs[t].bt
	}
	w.place.w = &w
	var outSecs []section
	inserted := make([]bool, len(adds))
	for _, s := range secs {
		// Sections that must come after the sections of added items the
		// module lacks.
		for i, a := range adds {
			if !inserted[i] && !have[a.id] && after(s.id, a.id) {
				outSecs = append(outSecs, section{a.id, a.vec()})
				inserted[i] = true
			}
		}
		if w.remap {
			s.body = w.remapSection(s.id, s.body)
		}
		for i, a := range adds {
			if s.id == a.id {
				s.body = appendToVec(s.body, a.items...)
				inserted[i] = true
			}
		}
		switch s.id {
		case secCode:
			s.body = w.instrumentCode(s.body)
		case secData:
			if f == FlagMemory {
				w.checkData(s.body)
			}
		}
		outSecs = append(outSecs, s)
	}
	for i, a := range adds {
		if !inserted[i] {
			outSecs = append(outSecs, section{a.id, a.vec()})
		}
	}
	if w.remap {
		// After the code section, wherever the name section is: label
		// names need the checks instrumentCode inserted.
		outSecs = w.remapNameSections(outSecs)
	} else {
		outSecs = dropMisreadNames(outSecs)
	}
	out = append(make([]byte, 0, len(wasm)+len(wasm)/8), wasm[:8]...)
	for _, s := range outSecs {
		out = append(out, s.id)
		out = wasmbin.AppendUint64(out, uint64(len(s.body)))
		out = append(out, s.body...)
	}
	return out, report{stats: w.place.stats, frames: w.frames}, nil
}

// memoryCheck is the FlagMemory check for flag memory m:
//
//	i32.const 0; i32.load align=2 memidx=m offset=0; if unreachable end
//
// With m == 0 the memarg is the plain one (flags 2, offset 0); otherwise
// bit 6 of the flags says a memory index follows them.
func memoryCheck(m uint32) []byte {
	check := []byte{0x41, 0x00, 0x28}
	if m == 0 {
		check = append(check, 0x02)
	} else {
		check = append(check, 0x02|0x40)
		check = wasmbin.AppendUint64(check, uint64(m))
	}
	return append(check, 0x00, 0x04, 0x40, 0x00, 0x0b)
}

func exportEntry(name string, kind byte, idx uint32) []byte {
	e := append(append(wasmbin.AppendUint64(nil, uint64(len(name))), name...), kind)
	return wasmbin.AppendUint64(e, uint64(idx))
}

// after reports whether a section with id must follow section want in the
// binary's order (custom sections go anywhere).
func after(id, want byte) bool {
	order := map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}
	if id == secCustom {
		return false
	}
	o, ok := order[id]
	if !ok {
		fail(fmt.Sprintf("unknown section id %d", id))
	}
	return o > order[want]
}

func appendToVec(body []byte, items ...[]byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n)+uint64(len(items)))
	out = append(out, body[r.pos:]...)
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
	// for a kind the rewrite adds nothing to.
	globals, memories uint64
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
	// results: each defined function's result
	// block type (nil for several results).
	results [][]byte
	// params: each defined function's parameter count.
	// bulkLocal: the index of the i32 local the function being copied gets
	// if it has a bulk instruction (usedBulk), to charge its length.
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
	r := &reader{b: body}
	n := r.u32()
	out := append(make([]byte, 0, len(body)+len(body)/8), wasmbin.AppendUint64(nil, uint64(n))...)
	var fn []byte
	for d := 0; n > 0; n, d = n-1, d+1 {
		size := r.u32()
		fr := &reader{b: r.bytes(int(size))}
		fn = fn[:0]
		// Locals.
		groups := fr.u32()
		groupsEnd := fr.pos
		var locals uint64
		v128 := false
		for l := groups; l > 0; l-- {
			locals += uint64(fr.u32())
			v128 = fr.valType() == 0x7b || v128
		}
		if w.remap {
			fn = w.instrumentBudgetFunction(d, fr, groups, groupsEnd, locals, v128, fn)
		} else {
			if d >= len(w.results) {
				fail("more function bodies than functions")
			}
			w.place.placeFunction(fr.b[fr.pos:], w.results[d])
			fn = append(fn, fr.b[:fr.pos]...)
			fn = w.place.emit(fr.b[fr.pos:], fn)
		}
		out = wasmbin.AppendUint64(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	return out
}
