package interrupt

import (
	"fmt"
	"sort"

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
	out = wasmbin.AppendUint64(append(out, 0x23), g)
	out = wasmbin.AppendInt64(append(out, 0x41), int64(charge))
	out = wasmbin.AppendUint64(append(out, 0x6b, 0x24), g)
	out = wasmbin.AppendUint64(append(out, 0x23), g)
	if stack {
		out = append(out, 0x41, 0x01, 0x6b) // i32.const 1; i32.sub
		out = wasmbin.AppendUint64(append(out, 0x23), uint64(w.stack))
		out = append(out, 0x72, 0x41, 0x00, 0x48, 0x04, 0x40) // i32.or; i32.const 0; i32.lt_s; if
		out = wasmbin.AppendUint64(append(out, 0x23), uint64(w.stack))
		out = append(out, 0x41, 0x00, 0x48, 0x04, 0x40, 0x00, 0x0b, 0x41) // i32.const 0; i32.lt_s; if unreachable end; i32.const
	} else {
		out = append(out, 0x41, 0x01, 0x48, 0x04, 0x40, 0x41) // i32.const 1; i32.lt_s; if; i32.const
	}
	out = wasmbin.AppendInt64(out, int64(w.budget))
	out = wasmbin.AppendUint64(append(out, 0x24), g)
	out = wasmbin.AppendUint64(append(out, 0x10), uint64(w.yield))
	return append(out, 0x0b)
}

// fn is the index of function f after the rewrite.
func (w *rewriter) fn(f uint32) uint32 {
	if !w.remap || f < w.yield {
		return f
	}
	if f == 1<<32-1 {
		fail("function index out of range")
	}
	return f + 1
}

// sig is what the rewrite needs of a function type.
type sig struct {
	params, results uint32
	// bt: the block type of the results (0x40, or the one value type);
	// nil for several (FlagBudget gives those a type of their own: see
	// wrapTypes).
	bt []byte
	// res: the results' value types as encoded.
	res []byte
	// ints and floats: the parameters ([0]) and results ([1]) that
	// wazero passes in integer registers (i32, i64, references) and in
	// float registers (f32, f64, v128).
	ints, floats [2]uint32
	// v128: a parameter or result is a v128.
	v128 bool
}

// funcTypeInfo returns the function types of a type section, refusing any
// entry but a function type: a recursion group (GC) holds several types,
// so the entries would not count the type indices.
func funcTypeInfo(body []byte) []sig {
	r := &reader{b: body}
	var sigs []sig
	for k := r.u32(); k > 0; k-- {
		if form := r.byte(); form != 0x60 {
			fail(fmt.Sprintf("unknown type form 0x%02x", form))
		}
		var s sig
		s.params = r.u32()
		for i := s.params; i > 0; i-- {
			s.class(0, r.valType())
		}
		s.results = r.u32()
		start := r.pos
		for i := s.results; i > 0; i-- {
			s.class(1, r.valType())
		}
		s.res = r.b[start:r.pos]
		switch s.results {
		case 0:
			s.bt = []byte{0x40}
		case 1:
			s.bt = s.res
		}
		sigs = append(sigs, s)
	}
	end(r)
	return sigs
}

// class counts a parameter (i 0) or result (i 1) of value type c.
func (s *sig) class(i int, c byte) {
	switch c {
	case 0x7d, 0x7c: // f32 f64
		s.floats[i]++
	case 0x7b: // v128
		s.floats[i]++
		s.v128 = true
	default:
		s.ints[i]++
	}
}

// readU32Vec reads a section that is a vector of u32 (the function
// section).
func readU32Vec(body []byte) []uint32 {
	r := &reader{b: body}
	var v []uint32
	for n := r.u32(); n > 0; n-- {
		v = append(v, r.u32())
	}
	end(r)
	return v
}

// hasLimits64 reports whether a table or memory section defines a table or
// memory with 64-bit indices: its bulk instructions take an i64 length,
// which the i32 local that charges it cannot hold.
func hasLimits64(id byte, body []byte) bool {
	r := &reader{b: body}
	for n := r.u32(); n > 0; n-- {
		if id == secTable {
			if !r.done() && r.b[r.pos] == 0x40 { // with an initialiser
				r.byte()
				r.byte()
				r.refType()
				if r.limits()&limits64 != 0 {
					return true
				}
				w := rewriter{globals: noLimit, memories: noLimit}
				w.constExpr(r)
				continue
			}
			r.refType()
		}
		if r.limits()&limits64 != 0 {
			return true
		}
	}
	return false
}

// bulkShift: FlagBudget charges a bulk instruction one unit (place.go) per
// 1<<bulkShift bytes (or table elements) of its length: about the
// nanoseconds a fill or a copy takes out of the caches.
const bulkShift = 3

// bulk reports whether 0xfc instruction sub is a bulk memory or table
// instruction whose time grows with its length, the operand on top of the
// stack: memory.init, memory.copy, memory.fill, table.init, table.copy,
// table.fill.
func bulk(sub uint32) bool {
	switch sub {
	case 8, 10, 11, 12, 14, 17:
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
	c := append([]byte{0x23}, gi...)
	c = append(append(c, 0x20), li...)
	c = append(c, 0x41, bulkShift, 0x76, 0x6b, 0x24)
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
	localsEnd := fr.pos
	code := fr.b[fr.pos:]
	p.placeFunction(code, w.results[d])
	if p.counted {
		p.sizeFrame(code)
	}
	w.curOrds = nil
	w.body = p.emit(code, w.body[:0])
	if w.usedBulk || p.saved >= 0 {
		k := byte(1)
		if p.saved >= 0 {
			k = 2 // the first is the bulk local, used or not
		}
		fn = wasmbin.AppendUint64(fn, uint64(groups)+1)
		fn = append(fn, fr.b[groupsEnd:localsEnd]...)
		fn = append(fn, k, 0x7f) // (local i32) or (local i32 i32)
	} else {
		fn = append(fn, fr.b[:localsEnd]...)
	}
	w.ords = append(w.ords, w.curOrds)
	if p.counted {
		w.frames = append(w.frames, p.frame)
	} else {
		w.frames = append(w.frames, -1)
	}
	return append(fn, w.body...)
}

// end refuses bytes after a section's content.
func end(r *reader) {
	if !r.done() {
		fail("unexpected bytes at the end of a section")
	}
}

// remapSection rewrites the function indices in a section other than the
// code section (which instrumentCode rewrites) and the custom sections
// (remapNameSections).
func (w *rewriter) remapSection(id byte, body []byte) []byte {
	switch id {
	case secTable:
		return w.remapTables(body)
	case secGlobal:
		return w.remapGlobals(body)
	case secExport:
		return w.remapExports(body)
	case secStart:
		r := &reader{b: body}
		out := wasmbin.AppendUint64(nil, uint64(w.fn(r.u32())))
		end(r)
		return out
	case secElement:
		return w.remapElements(body)
	case secData:
		return w.remapData(body)
	}
	return body
}

// copyConstExpr copies a constant expression through its end, rewriting
// ref.func and checking global indices.
func (w *rewriter) copyConstExpr(r *reader, out []byte) []byte {
	for {
		start := r.pos
		op := r.byte()
		switch {
		case op == 0x0b:
			return append(out, op)
		case op == 0xd2: // ref.func
			out = append(out, op)
			out = append(out, wasmbin.AppendUint64(nil, uint64(w.fn(r.u32())))...)
			continue
		case op == 0x23 || op == 0x24:
			w.global(r.u32())
		default:
			w.immediates(r, op)
		}
		out = append(out, r.b[start:r.pos]...)
	}
}

// remapTables: a table with an initialiser (function references: 0x40
// 0x00 reftype limits expr) may name a function in it.
func (w *rewriter) remapTables(body []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos
		withInit := !r.done() && r.b[r.pos] == 0x40
		if withInit {
			r.byte()
			if r.byte() != 0x00 {
				fail("unknown table encoding")
			}
		}
		r.refType()
		r.limits()
		out = append(out, r.b[start:r.pos]...)
		if withInit {
			out = w.copyConstExpr(r, out)
		}
	}
	end(r)
	return out
}

func (w *rewriter) remapGlobals(body []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos
		r.valType()
		r.byte() // mutability
		out = append(out, r.b[start:r.pos]...)
		out = w.copyConstExpr(r, out)
	}
	end(r)
	return out
}

func (w *rewriter) remapExports(body []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos
		r.name()
		kind := r.byte()
		out = append(out, r.b[start:r.pos]...)
		idx := r.u32()
		switch kind {
		case 0x00:
			idx = w.fn(idx)
		case kindGlobal:
			w.global(idx) // it would export the budget
		}
		out = wasmbin.AppendUint64(out, uint64(idx))
	}
	end(r)
	return out
}

// remapElements rewrites the eight forms of element segment: flags bit 0
// passive or declarative, bit 1 an explicit table index (active) or
// declarative, bit 2 expressions instead of function indices.
func (w *rewriter) remapElements(body []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos
		flags := r.u32()
		if flags > 7 {
			fail(fmt.Sprintf("unknown element segment flags %d", flags))
		}
		if flags&3 == 2 { // active, explicit table index
			r.u32()
		}
		out = append(out, r.b[start:r.pos]...)
		if flags&1 == 0 { // active: the offset
			out = w.copyConstExpr(r, out)
		}
		if flags&3 != 0 { // an element kind or a reference type follows
			start = r.pos
			if flags&4 == 0 {
				if kind := r.byte(); kind != 0x00 {
					fail(fmt.Sprintf("unknown element kind %d", kind))
				}
			} else {
				r.refType()
			}
			out = append(out, r.b[start:r.pos]...)
		}
		k := r.u32()
		out = wasmbin.AppendUint64(out, uint64(k))
		for ; k > 0; k-- {
			if flags&4 == 0 {
				out = append(out, wasmbin.AppendUint64(nil, uint64(w.fn(r.u32())))...)
			} else {
				out = w.copyConstExpr(r, out)
			}
		}
	}
	end(r)
	return out
}

// remapData copies the data segments, rewriting their offsets as any
// constant expression (an offset names no function in a valid module).
func (w *rewriter) remapData(body []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos
		switch flags := r.u32(); flags {
		case 0: // active, memory 0
			out = append(out, r.b[start:r.pos]...)
			out = w.copyConstExpr(r, out)
		case 1: // passive
			out = append(out, r.b[start:r.pos]...)
		case 2: // active, explicit memory
			r.u32()
			out = append(out, r.b[start:r.pos]...)
			out = w.copyConstExpr(r, out)
		default:
			fail(fmt.Sprintf("unknown data segment flags %d", flags))
		}
		start = r.pos
		r.bytes(int(r.u32()))
		out = append(out, r.b[start:r.pos]...)
	}
	end(r)
	return out
}

// remapNameSections rewrites the function indices in the "name" custom
// sections (function, local and label names), dropping a name section it
// cannot rewrite: names only serve stack traces and debuggers, and a wrong
// one would misname functions. Other custom sections are copied as they
// are.
func (w *rewriter) remapNameSections(secs []section) []section {
	out := secs[:0]
	for _, s := range secs {
		if s.id == secCustom {
			r := &reader{b: s.body}
			if r.name() == "name" {
				names, ok := w.remapNames(r.b[r.pos:])
				if !ok {
					continue
				}
				s.body = append(append([]byte{}, r.b[:r.pos]...), names...)
			}
		}
		out = append(out, s)
	}
	return out
}

// Name subsections: the ones keyed by function index, and the ones that
// the rewrite leaves as they are (module name; types, tables, memories,
// globals, element and data segments, fields and tags: the added type and
// global come last and go unnamed).
const (
	nameModule    = 0
	nameFunctions = 1
	nameLocals    = 2
	nameLabels    = 3
	nameTags      = 11
)

// remapNames rewrites the content of a name section (after its name); ok
// is false when it does not decode.
func (w *rewriter) remapNames(body []byte) (out []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isDecode := r.(decodeError); isDecode {
				out, ok = nil, false
				return
			}
			panic(r)
		}
	}()
	r := &reader{b: body}
	for !r.done() {
		id := r.byte()
		sub := &reader{b: r.bytes(int(r.u32()))}
		var b []byte
		switch {
		case id == nameFunctions:
			b = appendNameMap(nil, sub, w.fn)
		case id == nameLocals:
			b = w.appendIndirectNameMap(nil, sub, func(uint32) func(uint32) uint32 { return nil })
		case id == nameLabels:
			b = w.appendIndirectNameMap(nil, sub, w.labelIndex)
		case id == nameModule:
			sub.name()
			b = sub.b
		case id > nameLabels && id <= nameTags:
			b = sub.bytes(len(sub.b))
		default:
			fail(fmt.Sprintf("unknown name subsection %d", id))
		}
		end(sub)
		out = append(out, id)
		out = wasmbin.AppendUint64(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, true
}

// appendNameMap copies a name map (vec of index and name), mapping each
// index with idx (nil: unchanged). idx preserves the order, so the map
// stays sorted.
func appendNameMap(out []byte, r *reader, idx func(uint32) uint32) []byte {
	n := r.u32()
	out = wasmbin.AppendUint64(out, uint64(n))
	for ; n > 0; n-- {
		i := r.u32()
		if idx != nil {
			i = idx(i)
		}
		out = wasmbin.AppendUint64(out, uint64(i))
		start := r.pos
		r.name()
		out = append(out, r.b[start:r.pos]...)
	}
	return out
}

// appendIndirectNameMap copies an indirect name map keyed by function
// index, mapping each inner map's indices with inner(f).
func (w *rewriter) appendIndirectNameMap(out []byte, r *reader, inner func(f uint32) func(uint32) uint32) []byte {
	n := r.u32()
	out = wasmbin.AppendUint64(out, uint64(n))
	for ; n > 0; n-- {
		f := r.u32()
		out = wasmbin.AppendUint64(out, uint64(w.fn(f)))
		out = appendNameMap(out, r, inner(f))
	}
	return out
}

// labelIndex returns the mapping of function f's label indices: label j
// (the j-th block, loop, if, try or try_table) moves past the if of every
// check inserted before it, those whose ord is at most j. A function with
// no code (an import, or beyond the code section) has no labels to name.
func (w *rewriter) labelIndex(f uint32) func(uint32) uint32 {
	if f < w.yield || uint64(f-w.yield) >= uint64(len(w.ords)) {
		fail(fmt.Sprintf("label names for function %d, which has no code", f))
	}
	ords := w.ords[f-w.yield]
	return func(j uint32) uint32 {
		before := sort.Search(len(ords), func(i int) bool { return ords[i] > j })
		k := uint64(j) + uint64(before)
		if k >= noLimit {
			fail("label index out of range")
		}
		return uint32(k)
	}
}
