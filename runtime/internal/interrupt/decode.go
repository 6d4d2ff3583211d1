package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// noLimit is above every u32 index: the rewriter checks no index of that
// kind.
const noLimit = 1 << 32

type section struct {
	id   byte
	body []byte
}

// module is a module decoded once: its sections, and what the checks and
// the rewrite need of them. The function bodies, the tables, the element
// and data segments are left to the passes that rewrite or check them.
type module struct {
	secs []section
	// have: the ids of the sections the module has.
	have    map[byte]bool
	imports imports
	// sigs: the type section's function types. funcTypes: the function
	// section's type index of each defined function.
	sigs      []sig
	funcTypes []uint32
	// globals, memories: the counts of defined globals and memories.
	globals, memories uint32
	exports           []export
}

// export is an export section entry. head is its encoding up to its index
// (the name and the kind), copied as it is when the index is rewritten.
type export struct {
	name string
	kind byte
	idx  uint32
	head []byte
}

// body is the body of m's section id (one at most: decode refuses a
// repeated one), nil if it has none.
func (m *module) body(id byte) []byte {
	for _, s := range m.secs {
		if s.id == id {
			return s.body
		}
	}
	return nil
}

// decode splits a module into its sections and decodes its types,
// imports, function types, global and memory counts and exports.
func decode(wasm []byte) *module {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || wasm[4] != 1 || wasm[5] != 0 || wasm[6] != 0 || wasm[7] != 0 {
		fail("not a WebAssembly 1.0 binary")
	}
	m := &module{have: map[byte]bool{}}
	r := newReaderAt(wasm, 8)
	for !r.done() {
		id := r.byte()
		n := r.u32()
		m.secs = append(m.secs, section{id, r.bytes(int(n))})
	}
	for _, s := range m.secs {
		if s.id != wasmbin.SectionIDCustom && m.have[s.id] {
			// One count per section: a second would shift the added
			// indices under the first, or the types under the functions.
			fail(fmt.Sprintf("repeated section %d", s.id))
		}
		m.have[s.id] = true
		switch s.id {
		case wasmbin.SectionIDType:
			m.sigs = funcTypeInfo(s.body)
		case wasmbin.SectionIDFunction:
			m.funcTypes = readU32Vec(s.body)
		case wasmbin.SectionIDImport:
			m.imports = countImports(s.body)
		case wasmbin.SectionIDGlobal:
			m.globals = newReader(s.body).u32()
		case wasmbin.SectionIDMemory:
			m.memories = newReader(s.body).u32()
		case wasmbin.SectionIDExport:
			m.exports = readExports(s.body)
		}
	}
	return m
}

// readExports decodes an export section.
func readExports(body []byte) []export {
	r := newReader(body)
	var exports []export
	for n := r.u32(); n > 0; n-- {
		start := r.pos()
		var e export
		e.name = r.name()
		e.kind = r.byte()
		e.head = r.b[start:r.pos()]
		e.idx = r.u32()
		exports = append(exports, e)
	}
	end(r)
	return exports
}

// imports counts a module's imports. yield says whether one comes from
// YieldModule.
type imports struct {
	funcs, globals, memories uint32
	// funcTypes: the type index of each imported function.
	funcTypes []uint32
	yield     bool
	// limits64: a memory or table with 64-bit indices is imported;
	// mem64: a memory.
	limits64, mem64 bool
}

func countImports(body []byte) imports {
	r := newReader(body)
	var n imports
	for k := r.u32(); k > 0; k-- {
		if r.name() == YieldModule {
			n.yield = true
		}
		r.name()
		switch kind := r.byte(); kind {
		case wasmbin.ExternFunc:
			n.funcTypes = append(n.funcTypes, r.u32())
			n.funcs++
		case wasmbin.ExternTable:
			r.refType()
			n.limits64 = n.limits64 || r.limits()&wasmbin.LimitsIs64 != 0
		case wasmbin.ExternMemory:
			is64 := r.limits()&wasmbin.LimitsIs64 != 0
			n.limits64, n.mem64 = n.limits64 || is64, n.mem64 || is64
			n.memories++
		case wasmbin.ExternGlobal:
			r.valType()
			r.byte()
			n.globals++
		case wasmbin.ExternTag:
			r.byte()
			r.u32()
		default:
			fail(fmt.Sprintf("unknown import kind %d", kind))
		}
	}
	return n
}

// sig is what the rewrite needs of a function type.
type sig struct {
	params, results uint32
	// bt: the block type of the results (empty, or the one value type);
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
	r := newReader(body)
	var sigs []sig
	for k := r.u32(); k > 0; k-- {
		if form := r.byte(); form != wasmbin.TypeFormFunc {
			fail(fmt.Sprintf("unknown type form 0x%02x", form))
		}
		var s sig
		s.params = r.u32()
		for i := s.params; i > 0; i-- {
			s.class(0, r.valType())
		}
		s.results = r.u32()
		start := r.pos()
		for i := s.results; i > 0; i-- {
			s.class(1, r.valType())
		}
		s.res = r.b[start:r.pos()]
		switch s.results {
		case 0:
			s.bt = []byte{wasmbin.BlockTypeEmpty}
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
	case wasmbin.ValueTypeF32, wasmbin.ValueTypeF64:
		s.floats[i]++
	case wasmbin.ValueTypeV128:
		s.floats[i]++
		s.v128 = true
	default:
		s.ints[i]++
	}
}

// readU32Vec reads a section that is a vector of u32 (the function
// section).
func readU32Vec(body []byte) []uint32 {
	r := newReader(body)
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
	r := newReader(body)
	for n := r.u32(); n > 0; n-- {
		if id == wasmbin.SectionIDTable {
			if !r.done() && r.peek() == wasmbin.TableWithInit {
				r.byte()
				r.byte()
				r.refType()
				if r.limits()&wasmbin.LimitsIs64 != 0 {
					return true
				}
				w := rewriter{globals: noLimit, memories: noLimit}
				w.constExpr(r)
				continue
			}
			r.refType()
		}
		if r.limits()&wasmbin.LimitsIs64 != 0 {
			return true
		}
	}
	return false
}

// end refuses bytes after a section's content.
func end(r *reader) {
	if !r.done() {
		fail("unexpected bytes at the end of a section")
	}
}
