package interrupt

import (
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// decodeError is what fail panics with; instrumentWith recovers it as an
// ErrUnsupported error.
type decodeError string

func fail(msg string) { panic(decodeError(msg)) }

// must fails with err, if any. A reader's offsets are those of the slice
// it reads (a section, a function body), not the module's, so only the
// message is kept.
func must(err error) {
	var e *wasmbin.Error
	switch {
	case err == nil:
	case errors.As(err, &e):
		fail(e.Msg)
	default:
		fail(err.Error())
	}
}

// reader is a wasmbin.Reader whose errors fail: the passes read a module
// as straight-line code and refuse it at the first error. b is the slice it
// reads, for the passes that copy what they read (b[start:r.pos()]).
type reader struct {
	wasmbin.Reader
	b []byte
}

func newReader(b []byte) *reader { return &reader{Reader: wasmbin.NewReader(b, 0), b: b} }

// pos is the index in b of the next byte.
func (r *reader) pos() int { return r.Offset() }

func (r *reader) done() bool { return r.Done() }

func (r *reader) byte() byte {
	c, err := r.Byte()
	must(err)
	return c
}

// peek returns the next byte without reading it.
func (r *reader) peek() byte {
	c, err := r.Peek()
	must(err)
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 {
		fail("negative length")
	}
	b, err := r.Bytes(uint64(n))
	must(err)
	return b
}

func (r *reader) u64() uint64 {
	v, err := r.U64()
	must(err)
	return v
}

func (r *reader) u32() uint32 {
	v, err := r.U32()
	must(err)
	return v
}

// s64 skips a signed LEB128 number of up to 64 bits (the value is not
// needed).
func (r *reader) s64() {
	_, err := r.S64()
	must(err)
}

// name reads a name's bytes. They are not checked for UTF-8: a name
// section's names are copied as they are.
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
		_, err := r.S33()
		must(err)
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
	if flags&wasmbin.LimitsHasMax != 0 {
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
	v, err := r.S33()
	must(err)
	if v < 0 {
		fail("block type out of range")
	}
	return uint32(v)
}

func (r *reader) blockType() {
	switch r.peek() {
	case wasmbin.BlockTypeEmpty, wasmbin.ValueTypeI32, wasmbin.ValueTypeI64, wasmbin.ValueTypeF32, wasmbin.ValueTypeF64,
		wasmbin.ValueTypeV128, wasmbin.ValueTypeFuncref, wasmbin.ValueTypeExternref:
		r.byte()
	case wasmbin.ValueTypeRefNull, wasmbin.ValueTypeRef: // (ref null ht), (ref ht): a value type of two bytes or more
		r.valType()
	default: // a type index, or exnref's 0x69, as s33
		_, err := r.S33()
		must(err)
	}
}

// newReaderAt reads b from index pos.
func newReaderAt(b []byte, pos int) *reader {
	r := newReader(b)
	r.bytes(pos)
	return r
}
