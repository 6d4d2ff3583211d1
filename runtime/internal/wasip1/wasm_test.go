package wasip1_test

// A minimal WebAssembly encoder for the test guests: hand-assembled
// modules, so the tests need no toolchain.

import "github.com/wasmprov/wasmprov/runtime/internal/wasmbin"

const (
	tI32 = 0x7f
	tI64 = 0x7e
)

func uleb(v uint64) []byte { return wasmbin.AppendUint64(nil, v) }

func sleb(v int64) []byte { return wasmbin.AppendInt64(nil, v) }

func str(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items [][]byte) []byte {
	b := uleb(uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func section(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(payload)))...), payload...)
}

type sig struct{ params, results []byte }

func (s sig) encode() []byte {
	b := []byte{0x60}
	b = append(b, uleb(uint64(len(s.params)))...)
	b = append(b, s.params...)
	b = append(b, uleb(uint64(len(s.results)))...)
	return append(b, s.results...)
}

type imp struct {
	module, name string
	sig          sig
}

type fun struct {
	export string // "" for none
	sig    sig
	locals []byte // one entry per local, its type
	body   []byte // without the final end
}

type module struct {
	imports      []imp
	funcs        []fun
	minPages     uint32
	maxPages     uint32
	exportMemory bool
	data         []segment
	start        int // 1 + the index of the start function; 0 for none
}

// segment is an active data segment of memory 0.
type segment struct {
	offset uint32
	bytes  []byte
}

func (m module) encode() []byte {
	var types [][]byte
	for _, im := range m.imports {
		types = append(types, im.sig.encode())
	}
	for _, f := range m.funcs {
		types = append(types, f.sig.encode())
	}
	var imports, funcs, exports, codes [][]byte
	for k, im := range m.imports {
		e := append(str(im.module), str(im.name)...)
		e = append(e, 0x00)
		imports = append(imports, append(e, uleb(uint64(k))...))
	}
	for k, f := range m.funcs {
		idx := uint64(len(m.imports) + k)
		funcs = append(funcs, uleb(uint64(len(m.imports)+k)))
		if f.export != "" {
			exports = append(exports, append(append(str(f.export), 0x00), uleb(idx)...))
		}
		var locals [][]byte
		for _, t := range f.locals {
			locals = append(locals, []byte{0x01, t})
		}
		body := append(vec(locals), f.body...)
		body = append(body, 0x0b)
		codes = append(codes, append(uleb(uint64(len(body))), body...))
	}
	if m.exportMemory {
		exports = append(exports, append(append(str("memory"), 0x02), 0x00))
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types))...)
	out = append(out, section(2, vec(imports))...)
	out = append(out, section(3, vec(funcs))...)
	mem := append([]byte{0x01}, uleb(uint64(m.minPages))...)
	mem = append(mem, uleb(uint64(m.maxPages))...)
	out = append(out, section(5, vec([][]byte{mem}))...)
	out = append(out, section(7, vec(exports))...)
	if m.start > 0 {
		out = append(out, section(8, uleb(uint64(m.start-1)))...)
	}
	out = append(out, section(10, vec(codes))...)
	if len(m.data) > 0 {
		var segs [][]byte
		for _, d := range m.data {
			seg := append([]byte{0x00}, i32Const(int32(d.offset))...)
			seg = append(seg, 0x0b)
			seg = append(seg, uleb(uint64(len(d.bytes)))...)
			segs = append(segs, append(seg, d.bytes...))
		}
		out = append(out, section(11, vec(segs))...)
	}
	return out
}

// Instructions.
func localGet(k int) []byte   { return append([]byte{0x20}, uleb(uint64(k))...) }
func localSet(k int) []byte   { return append([]byte{0x21}, uleb(uint64(k))...) }
func call(k int) []byte       { return append([]byte{0x10}, uleb(uint64(k))...) }
func i32Const(v int32) []byte { return append([]byte{0x41}, sleb(int64(v))...) }
func i64Const(v int64) []byte { return append([]byte{0x42}, sleb(v)...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
