package precheck

import (
	"bytes"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The module generator of the tests: small, explicit encoders, so each
// test says which bytes it means.

func leb(v uint64) []byte { return wasmbin.AppendUint64(nil, v) }

func sleb(v int64) []byte { return wasmbin.AppendInt64(nil, v) }

func vec(items ...[]byte) []byte {
	out := leb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func name(s string) []byte { return append(leb(uint64(len(s))), s...) }

func section(id byte, body []byte) []byte {
	return cat([]byte{id}, leb(uint64(len(body))), body)
}

func module(sections ...[]byte) []byte {
	return cat([]byte(wasmbin.Magic+wasmbin.Version), cat(sections...))
}

// funcType is (func (param params...) (result results...)).
func funcType(params, results []byte) []byte {
	return cat([]byte{0x60}, leb(uint64(len(params))), params, leb(uint64(len(results))), results)
}

// body is a code section entry: local groups (count, type pairs), then
// the instructions, which must end with the body's end.
func body(locals [][2]uint64, expr []byte) []byte {
	b := leb(uint64(len(locals)))
	for _, g := range locals {
		b = append(b, leb(g[0])...)
		b = append(b, byte(g[1]))
	}
	b = append(b, expr...)
	return append(leb(uint64(len(b))), b...)
}

// gen is a module of n functions of type 0, (func (param i32) (result
// i32)), each with the body bodyOf(i) returns (a code section entry),
// a memory of one page, exported as "memory", and the first function
// exported as "f".
type gen struct {
	types   [][]byte
	imports [][]byte
	funcs   []uint32 // type index of each defined function
	tables  [][]byte
	mems    [][]byte
	globals [][]byte
	exports [][]byte
	start   []byte
	elems   [][]byte
	codes   [][]byte
	datas   [][]byte
	customs [][]byte // after everything
}

func (g *gen) bytes() []byte {
	var secs [][]byte
	add := func(id byte, items [][]byte) {
		if items != nil {
			secs = append(secs, section(id, vec(items...)))
		}
	}
	add(wasmbin.SectionIDType, g.types)
	add(wasmbin.SectionIDImport, g.imports)
	if g.funcs != nil {
		items := make([][]byte, len(g.funcs))
		for i, t := range g.funcs {
			items[i] = leb(uint64(t))
		}
		add(wasmbin.SectionIDFunction, items)
	}
	add(wasmbin.SectionIDTable, g.tables)
	add(wasmbin.SectionIDMemory, g.mems)
	add(wasmbin.SectionIDGlobal, g.globals)
	add(wasmbin.SectionIDExport, g.exports)
	if g.start != nil {
		secs = append(secs, section(wasmbin.SectionIDStart, g.start))
	}
	add(wasmbin.SectionIDElement, g.elems)
	add(wasmbin.SectionIDCode, g.codes)
	add(wasmbin.SectionIDData, g.datas)
	secs = append(secs, g.customs...)
	return module(secs...)
}

// i32i32 is the type (func (param i32) (result i32)).
var i32i32 = funcType([]byte{0x7f}, []byte{0x7f})

// funcsModule is a module whose functions, of type (func (param i32)
// (result i32)), have the given code section entries; with a memory
// and the first function exported.
func funcsModule(codes ...[]byte) []byte {
	g := gen{types: [][]byte{i32i32}, mems: [][]byte{{0x00, 0x01}}}
	for range codes {
		g.funcs = append(g.funcs, 0)
	}
	g.codes = codes
	g.exports = [][]byte{cat(name("memory"), []byte{0x02, 0x00})}
	if len(codes) > 0 {
		g.exports = append(g.exports, cat(name("f"), []byte{0x00, 0x00}))
	}
	return g.bytes()
}

// Instruction bytes.
var (
	opEnd      = []byte{0x0b}
	opBlock    = []byte{0x02, 0x40}
	opLoop     = []byte{0x03, 0x40}
	opLocalGet = func(i uint32) []byte { return append([]byte{0x20}, leb(uint64(i))...) }
	opLocalSet = func(i uint32) []byte { return append([]byte{0x21}, leb(uint64(i))...) }
	opI32Const = func(v int32) []byte { return append([]byte{0x41}, sleb(int64(v))...) }
	opBrIf     = func(l uint32) []byte { return append([]byte{0x0d}, leb(uint64(l))...) }
	opI32Add   = []byte{0x6a}
)

func repeat(b []byte, n int) []byte { return bytes.Repeat(b, n) }
