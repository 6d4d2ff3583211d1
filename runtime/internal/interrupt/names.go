package interrupt

import (
	"fmt"
	"sort"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// dropCustomSections drops every custom section but "name" (which trap
// backtraces read). Nothing reads the others from the instrumented module:
// the host reads a module's metadata ("wasmprov.metadata") from the bytes
// as shipped. Dropping them makes modules that differ only there (a
// provider built once and annotated with many names, producers or build
// ids) instrument to identical bytes, which the engines key their compiled
// code by: such modules share one compilation and its memory.
func dropCustomSections(secs []section) []section {
	out := secs[:0]
	for _, s := range secs {
		if s.id == wasmbin.SectionIDCustom && newReader(s.body).name() != "name" {
			continue
		}
		out = append(out, s)
	}
	return out
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
		if s.id == wasmbin.SectionIDCustom {
			r := newReader(s.body)
			if r.name() == "name" && !namesWellFormed(r.b[r.pos():]) {
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
	r := newReader(b)
	for !r.done() {
		id := r.byte()
		sub := newReader(r.bytes(int(r.u32())))
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

// remapNameSections rewrites the function indices in the "name" custom
// sections (function, local and label names), dropping a name section it
// cannot rewrite: names only serve stack traces and debuggers, and a wrong
// one would misname functions. Other custom sections are gone by then
// (dropCustomSections).
func (w *rewriter) remapNameSections(secs []section) []section {
	out := secs[:0]
	for _, s := range secs {
		if s.id == wasmbin.SectionIDCustom {
			r := newReader(s.body)
			if r.name() == "name" {
				names, ok := w.remapNames(r.b[r.pos():])
				if !ok {
					continue
				}
				s.body = append(append([]byte{}, r.b[:r.pos()]...), names...)
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
	r := newReader(body)
	for !r.done() {
		id := r.byte()
		sub := newReader(r.bytes(int(r.u32())))
		var b []byte
		switch {
		case id == nameFunctions:
			b = appendNameMap(nil, sub, w.nameFn)
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
		start := r.pos()
		r.name()
		out = append(out, r.b[start:r.pos()]...)
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
		out = wasmbin.AppendUint64(out, uint64(w.nameFn(f)))
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
