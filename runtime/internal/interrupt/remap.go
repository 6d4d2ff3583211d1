package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// remapSection rewrites the function indices in a section other than the
// code section (which instrumentCode rewrites) and the custom sections
// (remapNameSections).
func (w *rewriter) remapSection(m *module, s section) []byte {
	body := s.body
	switch s.id {
	case wasmbin.SectionIDTable:
		return w.remapTables(body)
	case wasmbin.SectionIDGlobal:
		return w.remapGlobals(body)
	case wasmbin.SectionIDExport:
		return w.remapExports(m.exports)
	case wasmbin.SectionIDStart:
		r := newReader(body)
		out := wasmbin.AppendUint64(nil, uint64(w.fn(r.u32())))
		end(r)
		return out
	case wasmbin.SectionIDElement:
		return w.remapElements(body)
	case wasmbin.SectionIDData:
		return w.remapData(body)
	}
	return body
}

// copyConstExpr copies a constant expression through its end, rewriting
// ref.func and checking global indices.
func (w *rewriter) copyConstExpr(r *reader, out []byte) []byte {
	for {
		start := r.pos()
		op := r.byte()
		switch {
		case op == wasmbin.OpcodeEnd:
			return append(out, op)
		case op == wasmbin.OpcodeRefFunc:
			out = append(out, op)
			out = append(out, wasmbin.AppendUint64(nil, uint64(w.fn(r.u32())))...)
			continue
		case op == wasmbin.OpcodeGlobalGet || op == wasmbin.OpcodeGlobalSet:
			w.global(r.u32())
		default:
			w.immediates(r, op)
		}
		out = append(out, r.b[start:r.pos()]...)
	}
}

// remapTables: a table with an initialiser (function references: 0x40
// 0x00 reftype limits expr) may name a function in it.
func (w *rewriter) remapTables(body []byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos()
		withInit := !r.done() && r.peek() == wasmbin.TableWithInit
		if withInit {
			r.byte()
			if r.byte() != 0 {
				fail("unknown table encoding")
			}
		}
		r.refType()
		r.limits()
		out = append(out, r.b[start:r.pos()]...)
		if withInit {
			out = w.copyConstExpr(r, out)
		}
	}
	end(r)
	return out
}

func (w *rewriter) remapGlobals(body []byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos()
		r.valType()
		r.byte() // mutability
		out = append(out, r.b[start:r.pos()]...)
		out = w.copyConstExpr(r, out)
	}
	end(r)
	return out
}

// remapExports re-encodes the export section from its entries, with the
// function indices moved and the global indices checked.
func (w *rewriter) remapExports(exports []export) []byte {
	out := wasmbin.AppendUint64(nil, uint64(len(exports)))
	for _, e := range exports {
		out = append(out, e.head...)
		idx := e.idx
		switch e.kind {
		case wasmbin.ExternFunc:
			idx = w.fn(idx)
		case wasmbin.ExternGlobal:
			w.global(idx) // it would export the budget
		}
		out = wasmbin.AppendUint64(out, uint64(idx))
	}
	return out
}

// remapElements rewrites the eight forms of element segment: flags bit 0
// passive or declarative, bit 1 an explicit table index (active) or
// declarative, bit 2 expressions instead of function indices.
func (w *rewriter) remapElements(body []byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos()
		flags := r.u32()
		if flags > 7 {
			fail(fmt.Sprintf("unknown element segment flags %d", flags))
		}
		if flags&3 == 2 { // active, explicit table index
			r.u32()
		}
		out = append(out, r.b[start:r.pos()]...)
		if flags&1 == 0 { // active: the offset
			out = w.copyConstExpr(r, out)
		}
		if flags&3 != 0 { // an element kind or a reference type follows
			start = r.pos()
			if flags&4 == 0 {
				if kind := r.byte(); kind != wasmbin.ExternFunc { // elemkind funcref
					fail(fmt.Sprintf("unknown element kind %d", kind))
				}
			} else {
				r.refType()
			}
			out = append(out, r.b[start:r.pos()]...)
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
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		start := r.pos()
		switch flags := r.u32(); flags {
		case 0: // active, memory 0
			out = append(out, r.b[start:r.pos()]...)
			out = w.copyConstExpr(r, out)
		case 1: // passive
			out = append(out, r.b[start:r.pos()]...)
		case 2: // active, explicit memory
			r.u32()
			out = append(out, r.b[start:r.pos()]...)
			out = w.copyConstExpr(r, out)
		default:
			fail(fmt.Sprintf("unknown data segment flags %d", flags))
		}
		start = r.pos()
		r.bytes(int(r.u32()))
		out = append(out, r.b[start:r.pos()]...)
	}
	end(r)
	return out
}
