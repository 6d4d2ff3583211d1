package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// FlagBudget's rewrite: the yield import takes function index Y (the
// number of imported functions), so every use of a function index from Y
// up is rewritten to the next index; the added type and global take the
// next free index and need no remapping.

// appendCheck appends the check charging w: FlagMemory's check, or
// FlagBudget's with budget global g and yield function y:
//
//	global.get g; i32.const w; i32.sub; global.set g
//	global.get g; i32.const 1; i32.lt_s
//	if
//	  i32.const Budget; global.set g
//	  call y
//	end
//
// or, when stack is set (the first check on a path from a counted
// function's entry: stack.go), one that also tests the stack counter s:
//
//	global.get g; i32.const w; i32.sub; global.set g
//	global.get g; i32.const 1; i32.sub; global.get s; i32.or; i32.const 0; i32.lt_s
//	if
//	  global.get s; i32.const 0; i32.lt_s; if unreachable end
//	  i32.const Budget; global.set g
//	  call y
//	end
//
// The budget is reset before the call, not after it: when the host stops
// the call by panicking in the yield function, the global is left at
// Budget. It never wraps: after every check it is in [1, Budget]; nothing
// but a check and a bulk charge (at most 2^29, always followed by a check)
// lowers it, and a check by at most maxRegion; so it stays above -2^30,
// and g - 1 does not wrap either.
func (w *rewriter) appendCheck(out []byte, charge uint32, stack bool) []byte {
	if !w.remap {
		return append(out, w.check...)
	}
	g := uint64(w.globals)
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), g)
	out = wasmbin.AppendInt64(append(out, wasmbin.OpcodeI32Const), int64(charge))
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeI32Sub, wasmbin.OpcodeGlobalSet), g)
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), g)
	if stack {
		out = append(out, wasmbin.OpcodeI32Const, 1, wasmbin.OpcodeI32Sub)
		out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), uint64(w.stack))
		out = append(out, wasmbin.OpcodeI32Or, wasmbin.OpcodeI32Const, 0, wasmbin.OpcodeI32LtS,
			wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty)
		out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), uint64(w.stack))
		out = append(out, wasmbin.OpcodeI32Const, 0, wasmbin.OpcodeI32LtS,
			wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty, wasmbin.OpcodeUnreachable, wasmbin.OpcodeEnd)
	} else {
		out = append(out, wasmbin.OpcodeI32Const, 1, wasmbin.OpcodeI32LtS, wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty)
	}
	out = wasmbin.AppendInt64(append(out, wasmbin.OpcodeI32Const), int64(w.budget))
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalSet), g)
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeCall), uint64(w.yield))
	return append(out, wasmbin.OpcodeEnd)
}

// fn is the index of function f after the rewrite. An index beyond the
// module's functions is refused: it would name a helper (bulk.go).
func (w *rewriter) fn(f uint32) uint32 {
	if uint64(f) >= w.funcs {
		fail(fmt.Sprintf("function index %d out of range", f))
	}
	return w.nameFn(f)
}

// nameFn is fn for the name section, which may name any index (a name
// beyond the module's functions would name a helper or nothing: harmless).
func (w *rewriter) nameFn(f uint32) uint32 {
	if !w.remap || f < w.yield {
		return f
	}
	if f == 1<<32-1 {
		fail("function index out of range")
	}
	return f + 1
}

// bulkShift: FlagBudget charges a bulk instruction one unit (place.go) per
// 1<<bulkShift bytes (or table elements) of its length: about the
// nanoseconds a fill or a copy takes out of the caches.
const bulkShift = 3

// bulk reports whether misc (0xfc) instruction sub is a bulk memory or table
// instruction whose time grows with its length, the operand on top of the
// stack: memory.init, memory.copy, memory.fill, table.init, table.copy,
// table.fill.
func bulk(sub uint32) bool {
	switch sub {
	case wasmbin.MiscMemoryInit, wasmbin.MiscMemoryCopy, wasmbin.MiscMemoryFill, wasmbin.MiscTableInit,
		wasmbin.MiscTableCopy, wasmbin.MiscTableFill:
		return true
	}
	return false
}

// bulkCharge is the code FlagBudget puts after a bulk instruction whose
// length the local l holds (the local.tee before the instruction put it
// there), before the check that always follows it: it charges one unit per
// 1<<bulkShift bytes to budget global g:
//
//	global.get g
//	local.get l; i32.const 3; i32.shr_u
//	i32.sub
//	global.set g
//
// The budget is at least 1 before it and the charge at most 2^29, so it
// never wraps; the check after it yields if the budget is spent.
func bulkCharge(g, l uint32) []byte {
	gi, li := wasmbin.AppendUint64(nil, uint64(g)), wasmbin.AppendUint64(nil, uint64(l))
	c := append([]byte{wasmbin.OpcodeGlobalGet}, gi...)
	c = append(append(c, wasmbin.OpcodeLocalGet), li...)
	c = append(c, wasmbin.OpcodeI32Const, bulkShift, wasmbin.OpcodeI32ShrU, wasmbin.OpcodeI32Sub, wasmbin.OpcodeGlobalSet)
	return append(c, gi...)
}

// instrumentBudgetFunction copies function body d (fr after its locals:
// groups local groups declaring locals locals, the groups from groupsEnd;
// v128: one is a v128) with its checks placed (place.go); if it has a bulk
// instruction, it gets an i32 local, after the others, to charge its
// lengths, and if it keeps the stack counter (stack.go), a second.
func (w *rewriter) instrumentBudgetFunction(d int, fr *reader, groups uint32, groupsEnd int, locals uint64, v128 bool, fn []byte) []byte {
	if d >= len(w.params) {
		fail("more function bodies than functions")
	}
	l := uint64(w.params[d]) + locals
	if l >= 1<<32-2 || groups == 1<<32-1 {
		fail("too many locals")
	}
	w.bulkLocal, w.usedBulk = uint32(l), false
	w.charge = bulkCharge(uint32(w.globals), uint32(l))
	p := &w.place
	s := w.sigs[w.funcTypes[int(w.yield)+d]]
	p.depth, p.params, p.results, p.locals = w.depth, s.params, s.results, locals
	p.fnV128, p.savedIndex = v128 || s.v128, int64(l)+1
	localsEnd := fr.pos()
	code := fr.b[fr.pos():]
	p.placeFunction(code, w.results[d])
	if p.counted {
		p.sizeFrame(code)
	}
	w.curOrds = nil
	w.body = p.emit(code, w.body[:0])
	fn = appendLocals(fn, fr.b, groups, groupsEnd, localsEnd, w.usedBulk, p.saved >= 0)
	w.ords = append(w.ords, w.curOrds)
	if p.counted {
		w.frames = append(w.frames, p.frame)
	} else {
		w.frames = append(w.frames, -1)
	}
	return append(fn, w.body...)
}
