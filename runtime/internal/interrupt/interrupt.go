// Package interrupt makes a WebAssembly module stoppable at little cost.
//
// InstrumentWith rewrites a module so that its code runs a check often
// enough on every execution path a module can construct. FlagMemory and
// FlagBudget place the checks by a pass over each function's control flow
// (place.go): no path runs more than a bounded amount of work (maxRegion
// units, about 2 µs of simple instructions) without passing one, whether it
// loops, runs straight-line code, branches forward over other checks,
// calls, returns through any number of frames or tail-calls; a bulk memory
// or table instruction is followed by one.
//
// The check is one of two things (InstrumentWith's Flag):
//
//   - FlagMemory: it reads word 0 of an added 1-page memory (min 1, max 1,
//     so it never grows or moves) exported as MemoryName, and traps when it
//     is non-zero; the host writes the word through its address from any
//     thread (wasmtime, whose stores cannot be stopped one by one from
//     another thread). The check names the memory with the multi-memory
//     encoding unless the module had no memory at all.
//   - FlagBudget: it subtracts the work it guards (in units) from a
//     private mutable i32 global and, once that is spent (below 1), resets
//     it to Budget (half a million units: ~0.5 ms of simple instructions,
//     ~5 ms of loads that miss every cache) and calls an added import,
//     YieldModule.YieldName, a host function (wazero). The yield is a Go
//     safe point: wazero runs compiled guest code outside the Go scheduler's
//     reach, so a garbage collection's stop-the-world waits for a guest
//     until it calls the host. The host stops a call there too, by
//     panicking in the yield function once its own flag is set. A bulk
//     instruction also charges its length (one unit per 8 bytes or
//     elements). The yield import takes function index Y, the number of
//     imported functions, so the rewrite moves every defined function up
//     by one: calls, ref.func, element segments, exports, the start
//     function and the name section's function, local and label names.
//     Modules with 64-bit memories or tables are refused (their lengths
//     are i64; wazero has no memory64 anyway). FlagBudget also bounds
//     wazero's call stack, which the linear-memory limit does not cover:
//     a second mutable i32 global the guest cannot name, exported as
//     StackName so the host can tell a stack overflow from other traps,
//     counts the bytes of estimated frames a call may still push
//     (StackLimit), and the first check on every path to a call traps
//     (unreachable) once it is spent (stack.go).
//
// The rewriter decodes every instruction and fails closed: an opcode it
// does not know, a structure it cannot follow, an instruction that could
// block where no check runs (memory.atomic.wait, FlagMemory and
// FlagBudget), or an index of the kind it adds beyond the module's own (a
// global index in FlagBudget mode; a memory index in an
// instruction, a data segment or an export in FlagMemory mode), which the
// original module could not have used but which would reach the added flag
// after the rewrite, is an error, never a silently wrong module. (No
// original function index reaches FlagBudget's yield import, and the type
// it adds is only a signature: a module that names it, invalid before,
// gains nothing a module declaring it itself would not have; nor do the
// types [] -> results it adds for blocks around the bodies of functions
// with several results.) FlagBudget refuses a tail call that wazero makes
// a plain call (its parameters or results do not fit in registers) inside
// a try block (stack.go).
package interrupt

import (
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// FormatVersion names the instrumenter's output format. Hosts that cache
// instrumented modules key the cache by it: bump it whenever InstrumentWith's
// output for some input changes (the golden tests pin the bytes, so such a
// change fails them first).
const FormatVersion = 3

// MemoryName is the export name of the interrupt flag's memory in
// FlagMemory mode. Both modes refuse a module that already exports it.
const MemoryName = "wasmprov_interrupt"

// Flag says where the instrumented checks read the interrupt flag.
type Flag int

// The values are those of the first format (FlagMemory 1, FlagBudget 2):
// hosts may have cached rewrites under them.
const (
	// FlagMemory: word 0 of an added 1-page memory (min 1, max 1) exported
	// as MemoryName (engines that cannot set a global from another thread:
	// wasmtime).
	FlagMemory Flag = iota + 1
	// FlagBudget: a private mutable i32 global from which every check
	// subtracts the work it guards; once spent it is reset to Budget and
	// the guest calls the imported YieldModule.YieldName, which the host
	// uses as a Go safe point and to stop the call (wazero).
	FlagBudget
)

const (
	// YieldModule is the import module of the yield function FlagBudget
	// adds.
	YieldModule = "wasmprov_interrupt"
	// YieldName is the import name of the yield function: (func), no
	// parameters, no results.
	YieldName = "yield"
	// Budget is the number of units (place.go: about a nanosecond of a
	// chain of simple instructions each) between two calls of the yield
	// function in FlagBudget mode: each check charges at least the units
	// run since the previous one, and the guest yields once the budget is
	// spent, so it runs at most Budget + maxRegion units between yields.
	Budget = 1 << 19
)

// ErrUnsupported wraps every reason InstrumentWith refuses a module.
var ErrUnsupported = errors.New("cannot instrument module for interruption")

const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

const (
	kindMemory = 0x02
	kindGlobal = 0x03
)

// limits64 is the limits flag of 64-bit memory and table indices.
const limits64 = 0x04

// noLimit is above every u32 index: the rewriter checks no index of that
// kind.
const noLimit = 1 << 32

type section struct {
	id   byte
	body []byte
}

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

// InstrumentWith returns the module instrumented to read the flag f says.
func InstrumentWith(wasm []byte, f Flag) ([]byte, error) {
	out, _, err := instrumentWith(wasm, f, options{budget: Budget, stack: StackLimit})
	return out, err
}

// instrument is InstrumentWith with FlagBudget's budget (the tests make it
// small, down to 1: a yield at every check); stats counts the checks it
// placed, by reason.
func instrument(wasm []byte, f Flag, budget int32) (out []byte, stats [numReasons]int, err error) {
	out, rep, err := instrumentWith(wasm, f, options{budget: budget, stack: StackLimit})
	return out, rep.stats, err
}

// report is what instrumentWith says of its work (tests and tuning): the
// checks placed, by reason, and (FlagBudget) each defined function's frame
// estimate, -1 for a function it does not count.
type report struct {
	stats  [numReasons]int
	frames []int32
}

// options are the limits FlagBudget writes into the module (the tests make
// them small).
type options struct {
	// budget: Budget.
	budget int32
	// stack: StackLimit.
	stack int32
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

// dropMisreadNames drops a "name" custom section whose module, function or
// local names do not fill their subsections exactly. wazero reads those
// subsections by their content, not by their sizes, so it reads on past
// such a section: harmless in the original module when the section comes
// last, fatal to the compilation once the rewrite has appended a section
// after it. A well-formed name section is kept as it is.
func dropMisreadNames(secs []section) []section {
	out := secs[:0]
	for _, s := range secs {
		if s.id == secCustom {
			r := &reader{b: s.body}
			if r.name() == "name" && !namesWellFormed(r.b[r.pos:]) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// namesWellFormed reports whether a name section's content (after its
// name) is a sequence of subsections whose module, function and local
// names fill them exactly.
func namesWellFormed(b []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isDecode := r.(decodeError); !isDecode {
				panic(r)
			}
			ok = false
		}
	}()
	r := &reader{b: b}
	for !r.done() {
		id := r.byte()
		sub := &reader{b: r.bytes(int(r.u32()))}
		switch id {
		case nameModule:
			sub.name()
		case nameFunctions:
			appendNameMap(nil, sub, nil)
		case nameLocals:
			for n := sub.u32(); n > 0; n-- {
				sub.u32()
				appendNameMap(nil, sub, nil)
			}
		default:
			continue
		}
		if !sub.done() {
			return false
		}
	}
	return true
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

// imports counts a module's imports. yield says whether one comes from
// YieldModule.
type imports struct {
	funcs, globals, memories uint32
	// funcTypes: the type index of each imported function.
	funcTypes []uint32
	yield     bool
	// limits64: a memory or table with 64-bit indices is imported.
	limits64 bool
}

func countImports(body []byte) imports {
	r := &reader{b: body}
	var n imports
	for k := r.u32(); k > 0; k-- {
		if r.name() == YieldModule {
			n.yield = true
		}
		r.name()
		switch kind := r.byte(); kind {
		case 0x00: // func
			n.funcTypes = append(n.funcTypes, r.u32())
			n.funcs++
		case 0x01: // table
			r.refType()
			n.limits64 = n.limits64 || r.limits()&limits64 != 0
		case kindMemory:
			n.limits64 = n.limits64 || r.limits()&limits64 != 0
			n.memories++
		case kindGlobal:
			r.valType()
			r.byte()
			n.globals++
		case 0x04: // tag
			r.byte()
			r.u32()
		default:
			fail(fmt.Sprintf("unknown import kind %d", kind))
		}
	}
	return n
}

// checkExportName refuses a module that already exports MemoryName (both
// modes) or, in FlagBudget mode, StackName.
func checkExportName(body []byte, f Flag) {
	name, other := MemoryName, MemoryName
	if f == FlagBudget {
		other = StackName
	}
	r := &reader{b: body}
	for n := r.u32(); n > 0; n-- {
		if e := r.name(); e == name || e == other {
			fail("the module already exports " + e)
		}
		r.byte()
		r.u32()
	}
}

// checkExportedMemories refuses an export of a memory index the module
// does not have: it would export the flag's memory after the rewrite.
func (w *rewriter) checkExportedMemories(body []byte) {
	r := &reader{b: body}
	for n := r.u32(); n > 0; n-- {
		r.name()
		kind := r.byte()
		idx := r.u32()
		if kind == kindMemory {
			w.memory(idx)
		}
	}
}

// checkData refuses an active data segment that names a memory index the
// module does not have: after the rewrite it would initialise the flag.
func (w *rewriter) checkData(body []byte) {
	r := &reader{b: body}
	for n := r.u32(); n > 0; n-- {
		switch flags := r.u32(); flags {
		case 0: // active, memory 0
			w.memory(0)
			w.constExpr(r)
		case 1: // passive
		case 2: // active, explicit memory
			w.memory(r.u32())
			w.constExpr(r)
		default:
			fail(fmt.Sprintf("unknown data segment flags %d", flags))
		}
		r.bytes(int(r.u32()))
	}
}

// constExpr skips a constant expression, through its end.
func (w *rewriter) constExpr(r *reader) {
	for {
		op := r.byte()
		if op == 0x0b {
			return
		}
		w.immediates(r, op)
	}
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

func (w *rewriter) global(idx uint32) {
	if uint64(idx) >= w.globals {
		fail(fmt.Sprintf("global index %d out of range", idx))
	}
}

func (w *rewriter) memory(idx uint32) {
	if uint64(idx) >= w.memories {
		fail(fmt.Sprintf("memory index %d out of range", idx))
	}
}

func (w *rewriter) memArg(r *reader) {
	flags, mem := r.memArg()
	// Flags from bit 7 up are no encoding the rewriter knows; they are
	// only refused when memory indices matter (FlagMemory): FlagBudget
	// copies them as they are, as it always has.
	if flags >= 0x80 && w.memories != noLimit {
		fail(fmt.Sprintf("unknown memarg flags 0x%x", flags))
	}
	w.memory(mem)
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

// immediates skips op's immediates, checking the memory indices among them.
func (w *rewriter) immediates(r *reader, op byte) {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f, op == 0x19, op == 0x1a, op == 0x1b:
		// unreachable nop else throw_ref end return catch_all drop select
	case op == 0x02, op == 0x04, op == 0x06: // block if try
		r.blockType()
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, op == 0x10, op == 0x12,
		op == 0x14, op == 0x15, op == 0x18, op == 0xd5, op == 0xd6: // tag/label/func/type index
		r.u32()
	case op == 0x0e: // br_table
		for n := r.u32(); n > 0; n-- {
			r.u32()
		}
		r.u32()
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		for n := r.u32(); n > 0; n-- {
			r.valType()
		}
	case op == 0x1f: // try_table
		r.blockType()
		for n := r.u32(); n > 0; n-- {
			switch k := r.byte(); k {
			case 0x00, 0x01:
				r.u32()
				r.u32()
			case 0x02, 0x03:
				r.u32()
			default:
				fail(fmt.Sprintf("unknown catch kind %d", k))
			}
		}
	case op >= 0x20 && op <= 0x26: // locals, globals, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		w.memArg(r)
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		w.memory(r.u32())
	case op == 0x41:
		r.s64()
	case op == 0x42:
		r.s64()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
	case op == 0xd0: // ref.null ht
		r.s64()
	case op == 0xd1, op == 0xd3, op == 0xd4: // ref.is_null, ref.eq, ref.as_non_null
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0xfc:
		w.fc(r, r.u32())
	case op == 0xfd:
		w.simd(r, r.u32())
	case op == 0xfe:
		sub := r.u32()
		if sub == 0x03 { // atomic.fence
			r.byte()
		} else {
			w.memArg(r)
		}
	default:
		fail(fmt.Sprintf("unknown opcode 0x%02x", op))
	}
}

func (w *rewriter) fc(r *reader, sub uint32) {
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init data mem
		r.u32()
		w.memory(r.u32())
	case sub == 9, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10: // memory.copy dst src
		w.memory(r.u32())
		w.memory(r.u32())
	case sub == 12, sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		w.memory(r.u32())
	default:
		fail(fmt.Sprintf("unknown 0xfc opcode %d", sub))
	}
}

func (w *rewriter) simd(r *reader, sub uint32) {
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		w.memArg(r)
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		w.memArg(r)
		r.byte()
	case sub <= 0x113:
	default:
		fail(fmt.Sprintf("unknown SIMD opcode %d", sub))
	}
}

type decodeError string

func fail(msg string) { panic(decodeError(msg)) }

type reader struct {
	b   []byte
	pos int
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		fail("unexpected end of module")
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.pos+n > len(r.b) {
		fail("unexpected end of module")
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) u64() uint64 {
	var v uint64
	for shift := 0; shift < 70; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	fail("LEB128 too long")
	return 0
}

func (r *reader) u32() uint32 {
	v := r.u64()
	if v > 1<<32-1 {
		fail("u32 out of range")
	}
	return uint32(v)
}

func (r *reader) s64() { r.u64() } // the same bytes; the value is not needed

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

// valType reads a value type and returns its first byte.
func (r *reader) valType() byte {
	switch c := r.byte(); c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return c
	case 0x69: // exnref (exception handling, which wazero decodes)
		return c
	case 0x63, 0x64: // (ref null ht), (ref ht)
		r.s64()
		return c
	default:
		fail(fmt.Sprintf("unknown value type 0x%02x", c))
		return 0
	}
}

func (r *reader) refType() { r.valType() }

// limits reads a table's or memory's limits and returns their flags (bit 2:
// 64-bit indices).
func (r *reader) limits() byte {
	flags := r.byte()
	r.u64()
	if flags&1 != 0 {
		r.u64()
	}
	return flags
}

// memArg reads a memarg and returns its flags (alignment and bit 6) and
// memory index: with bit 6 of the flags set (multi-memory), the memory
// index follows the flags, before the offset; otherwise it is 0.
func (r *reader) memArg() (flags, mem uint32) {
	flags = r.u32()
	if flags&0x40 != 0 {
		mem = r.u32()
	}
	r.u64() // offset (u64 for memory64)
	return flags, mem
}

// typeIndex reads a block type's type index (s33), refusing a negative one.
func (r *reader) typeIndex() uint32 {
	var v int64
	var shift uint
	for {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if c&0x40 != 0 || v >= 1<<32 {
				fail("block type out of range")
			}
			return uint32(v)
		}
		if shift >= 35 {
			fail("LEB128 too long")
		}
	}
}

func (r *reader) blockType() {
	if r.done() {
		fail("unexpected end of module")
	}
	switch c := r.b[r.pos]; c {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.pos++
	case 0x63, 0x64: // (ref null ht), (ref ht): a value type of two bytes or more
		r.valType()
	default:
		r.s64() // a type index as s33
	}
}
