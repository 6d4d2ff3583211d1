package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

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
	case wasmbin.ValueTypeI32, wasmbin.ValueTypeI64, wasmbin.ValueTypeF32, wasmbin.ValueTypeF64, wasmbin.ValueTypeV128,
		wasmbin.ValueTypeFuncref, wasmbin.ValueTypeExternref:
		return c
	case wasmbin.ValueTypeExnref: // exception handling, which wazero decodes
		return c
	case wasmbin.ValueTypeRefNull, wasmbin.ValueTypeRef: // (ref null ht), (ref ht)
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
	if flags&wasmbin.MemArgMemIdx != 0 {
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
	case wasmbin.BlockTypeEmpty, wasmbin.ValueTypeI32, wasmbin.ValueTypeI64, wasmbin.ValueTypeF32, wasmbin.ValueTypeF64,
		wasmbin.ValueTypeV128, wasmbin.ValueTypeFuncref, wasmbin.ValueTypeExternref:
		r.pos++
	case wasmbin.ValueTypeRefNull, wasmbin.ValueTypeRef: // (ref null ht), (ref ht): a value type of two bytes or more
		r.valType()
	default:
		r.s64() // a type index as s33
	}
}
