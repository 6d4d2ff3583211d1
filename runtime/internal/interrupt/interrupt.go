// Package interrupt makes a WebAssembly module stoppable at little cost.
//
// Instrument rewrites a module so that every function entry and every loop
// header reads one exported mutable i32 global, GlobalName, and traps
// (unreachable) when it is non-zero. The host stops a runaway call by
// setting the global from another goroutine: any execution that does not
// end must either loop or call, so it reaches a check within one loop
// iteration or one call.
//
// This replaces wazero's WithCloseOnContextDone, which makes every loop
// header an indirect call into the engine and every guest call spawn a
// goroutine (2-3x on a Go guest's method call); the check here is one load,
// one compare and one predictable branch.
//
// The rewriter decodes every instruction and fails closed: an opcode it
// does not know, or a global index beyond the module's own (which the
// original module could not have used, but which would reach the added
// global after the rewrite), is an error, never a silently wrong module.
package interrupt

import (
	"errors"
	"fmt"
)

// GlobalName is the export name of the interrupt flag.
const GlobalName = "wasmprov_interrupt"

// ErrUnsupported wraps every reason Instrument refuses a module.
var ErrUnsupported = errors.New("cannot instrument module for interruption")

const (
	secCustom    = 0
	secImport    = 2
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

type section struct {
	id   byte
	body []byte
}

// Instrument returns the instrumented module.
func Instrument(wasm []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(decodeError); ok {
				out, err = nil, fmt.Errorf("%w: %s", ErrUnsupported, string(e))
				return
			}
			panic(r)
		}
	}()
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
	var importedGlobals, definedGlobals uint32
	haveGlobal, haveExport := false, false
	for _, s := range secs {
		switch s.id {
		case secImport:
			importedGlobals = countImportedGlobals(s.body)
		case secGlobal:
			haveGlobal = true
			definedGlobals = (&reader{b: s.body}).u32()
		case secExport:
			haveExport = true
			checkExportName(s.body)
		}
	}
	g := importedGlobals + definedGlobals
	check := append(append([]byte{0x23}, leb(uint64(g))...), 0x04, 0x40, 0x00, 0x0b)

	newGlobal := []byte{0x7f, 0x01, 0x41, 0x00, 0x0b} // (mut i32) (i32.const 0)
	newExport := append(append(leb(uint64(len(GlobalName))), GlobalName...), 0x03)
	newExport = append(newExport, leb(uint64(g))...)

	var outSecs []section
	insertedGlobal, insertedExport := false, false
	for _, s := range secs {
		// Sections that must come after the global and export sections.
		if !insertedGlobal && !haveGlobal && after(s.id, secGlobal) {
			outSecs = append(outSecs, section{secGlobal, append(leb(1), newGlobal...)})
			insertedGlobal = true
		}
		if !insertedExport && !haveExport && after(s.id, secExport) {
			outSecs = append(outSecs, section{secExport, append(leb(1), newExport...)})
			insertedExport = true
		}
		switch s.id {
		case secGlobal:
			s.body = appendToVec(s.body, newGlobal)
			insertedGlobal = true
		case secExport:
			s.body = appendToVec(s.body, newExport)
			insertedExport = true
		case secCode:
			s.body = instrumentCode(s.body, check, g)
		}
		outSecs = append(outSecs, s)
	}
	if !insertedGlobal {
		outSecs = append(outSecs, section{secGlobal, append(leb(1), newGlobal...)})
	}
	if !insertedExport {
		outSecs = append(outSecs, section{secExport, append(leb(1), newExport...)})
	}
	out = append(make([]byte, 0, len(wasm)+len(wasm)/8), wasm[:8]...)
	for _, s := range outSecs {
		out = append(out, s.id)
		out = append(out, leb(uint64(len(s.body)))...)
		out = append(out, s.body...)
	}
	return out, nil
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

func appendToVec(body, item []byte) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := leb(uint64(n) + 1)
	out = append(out, body[r.pos:]...)
	return append(out, item...)
}

func countImportedGlobals(body []byte) uint32 {
	r := &reader{b: body}
	var globals uint32
	for n := r.u32(); n > 0; n-- {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0x00: // func
			r.u32()
		case 0x01: // table
			r.refType()
			r.limits()
		case 0x02: // memory
			r.limits()
		case 0x03: // global
			r.valType()
			r.byte()
			globals++
		case 0x04: // tag
			r.byte()
			r.u32()
		default:
			fail(fmt.Sprintf("unknown import kind %d", kind))
		}
	}
	return globals
}

func checkExportName(body []byte) {
	r := &reader{b: body}
	for n := r.u32(); n > 0; n-- {
		if r.name() == GlobalName {
			fail("the module already exports " + GlobalName)
		}
		r.byte()
		r.u32()
	}
}

// instrumentCode rewrites the code section: the check at each function's
// entry and after each loop's block type.
func instrumentCode(body, check []byte, g uint32) []byte {
	r := &reader{b: body}
	n := r.u32()
	out := append(make([]byte, 0, len(body)+len(body)/8), leb(uint64(n))...)
	var fn []byte
	for ; n > 0; n-- {
		size := r.u32()
		fr := &reader{b: r.bytes(int(size))}
		fn = fn[:0]
		// Locals.
		for l := fr.u32(); l > 0; l-- {
			fr.u32()
			fr.valType()
		}
		fn = append(fn, fr.b[:fr.pos]...)
		fn = append(fn, check...)
		fn = copyInstructions(fr, fn, check, g)
		out = append(out, leb(uint64(len(fn)))...)
		out = append(out, fn...)
	}
	return out
}

// copyInstructions copies a function's expression, adding check after each
// loop header.
func copyInstructions(r *reader, out, check []byte, g uint32) []byte {
	for !r.done() {
		start := r.pos
		op := r.byte()
		switch {
		case op == 0x03: // loop bt
			r.blockType()
			out = append(out, r.b[start:r.pos]...)
			out = append(out, check...)
			continue
		case op == 0x23 || op == 0x24: // global.get / global.set
			if idx := r.u32(); idx >= g {
				fail(fmt.Sprintf("global index %d out of range", idx))
			}
		default:
			skipImmediates(r, op)
		}
		out = append(out, r.b[start:r.pos]...)
	}
	return out
}

func skipImmediates(r *reader, op byte) {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f, op == 0x19, op == 0x1a, op == 0x1b:
		// unreachable nop else throw_ref end return catch_all drop select
	case op == 0x02, op == 0x04, op == 0x06: // block if try
		r.blockType()
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, op == 0x10, op == 0x12,
		op == 0x14, op == 0x15, op == 0x18, op == 0xd4, op == 0xd6: // tag/label/func/type index
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
		r.memArg()
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		r.u32()
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
	case op == 0xd1, op == 0xd3, op == 0xd5: // ref.is_null, ref.as_non_null, ref.eq
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0xfc:
		skipFC(r, r.u32())
	case op == 0xfd:
		skipSIMD(r, r.u32())
	case op == 0xfe:
		sub := r.u32()
		if sub == 0x03 { // atomic.fence
			r.byte()
		} else {
			r.memArg()
		}
	default:
		fail(fmt.Sprintf("unknown opcode 0x%02x", op))
	}
}

func skipFC(r *reader, sub uint32) {
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init data mem
		r.u32()
		r.u32()
	case sub == 9, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10, sub == 12, sub == 14: // memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		r.u32()
	default:
		fail(fmt.Sprintf("unknown 0xfc opcode %d", sub))
	}
}

func skipSIMD(r *reader, sub uint32) {
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		r.memArg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memArg()
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

func (r *reader) valType() {
	switch c := r.byte(); c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
	case 0x63, 0x64: // (ref null ht), (ref ht)
		r.s64()
	default:
		fail(fmt.Sprintf("unknown value type 0x%02x", c))
	}
}

func (r *reader) refType() { r.valType() }

func (r *reader) limits() {
	flags := r.byte()
	r.u64()
	if flags&1 != 0 {
		r.u64()
	}
}

func (r *reader) memArg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.u64()
}

func (r *reader) blockType() {
	if r.done() {
		fail("unexpected end of module")
	}
	switch c := r.b[r.pos]; c {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		r.pos++
	default:
		r.s64() // a type index as s33
	}
}

func leb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}
