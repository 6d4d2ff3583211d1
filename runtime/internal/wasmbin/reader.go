package wasmbin

import "unicode/utf8"

// Reader reads a byte slice with bounds checks. Its offsets are absolute:
// a Reader made with NewReader(b, base) reports base+i for b[i], so errors
// name offsets in the module, not in a section.
//
// A Reader is a small value; copy it to look ahead.
type Reader struct {
	buf  []byte
	pos  int
	base int
}

// NewReader reads b, whose first byte is at offset base in the module.
func NewReader(b []byte, base int) Reader { return Reader{buf: b, base: base} }

// Offset is the offset of the next byte.
func (r *Reader) Offset() int { return r.base + r.pos }

// Len is the number of bytes left.
func (r *Reader) Len() int { return len(r.buf) - r.pos }

// Done reports whether every byte was read.
func (r *Reader) Done() bool { return r.pos >= len(r.buf) }

// Rest returns the bytes left, without reading them.
func (r *Reader) Rest() []byte { return r.buf[r.pos:] }

// Errorf returns an *Error at the reader's offset.
func (r *Reader) Errorf(format string, args ...any) error {
	return Errorf(r.Offset(), format, args...)
}

func (r *Reader) eof(what string) error {
	return r.Errorf("unexpected end of input reading %s", what)
}

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, r.eof("a byte")
	}
	c := r.buf[r.pos]
	r.pos++
	return c, nil
}

// Peek returns the next byte without reading it.
func (r *Reader) Peek() (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, r.eof("a byte")
	}
	return r.buf[r.pos], nil
}

// Bytes reads n bytes; the result aliases the reader's slice.
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.buf)-r.pos) {
		return nil, r.Errorf("%d bytes expected, %d left", n, len(r.buf)-r.pos)
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// Skip reads n bytes and discards them.
func (r *Reader) Skip(n uint64) error {
	_, err := r.Bytes(n)
	return err
}

// Sub reads n bytes and returns a Reader over them, at their offsets.
func (r *Reader) Sub(n uint64) (Reader, error) {
	off := r.Offset()
	b, err := r.Bytes(n)
	if err != nil {
		return Reader{}, err
	}
	return Reader{buf: b, base: off}, nil
}

func (r *Reader) lebError(err error, what string) error {
	return r.Errorf("%s: %v", what, err)
}

// U32 reads an unsigned 32-bit LEB128 number. (The one-byte case is
// small enough to inline; the others take u32Slow.)
func (r *Reader) U32() (uint32, error) {
	b := r.buf[r.pos:]
	if len(b) > 0 && b[0] < 0x80 {
		r.pos++
		return uint32(b[0]), nil
	}
	return r.u32Slow()
}

func (r *Reader) u32Slow() (uint32, error) {
	v, n, err := DecodeUint32(r.buf[r.pos:])
	if err != nil {
		return 0, r.lebError(err, "u32")
	}
	r.pos += n
	return v, nil
}

// U64 reads an unsigned 64-bit LEB128 number.
func (r *Reader) U64() (uint64, error) {
	b := r.buf[r.pos:]
	if len(b) > 0 && b[0] < 0x80 {
		r.pos++
		return uint64(b[0]), nil
	}
	return r.u64Slow()
}

func (r *Reader) u64Slow() (uint64, error) {
	v, n, err := DecodeUint64(r.buf[r.pos:])
	if err != nil {
		return 0, r.lebError(err, "u64")
	}
	r.pos += n
	return v, nil
}

// oneByteSigned is the value of a one-byte signed LEB128 number c
// (c < 0x80): its 7 bits, sign-extended.
func oneByteSigned(c byte) int64 { return int64(int8(c<<1)) >> 1 }

// S32 reads a signed 32-bit LEB128 number.
func (r *Reader) S32() (int32, error) {
	b := r.buf[r.pos:]
	if len(b) > 0 && b[0] < 0x80 {
		r.pos++
		return int32(int8(b[0]<<1) >> 1), nil
	}
	return r.s32Slow()
}

func (r *Reader) s32Slow() (int32, error) {
	v, n, err := DecodeInt32(r.buf[r.pos:])
	if err != nil {
		return 0, r.lebError(err, "s32")
	}
	r.pos += n
	return v, nil
}

// S33 reads a signed 33-bit LEB128 number (a block type, a heap type).
func (r *Reader) S33() (int64, error) {
	v, n, err := DecodeInt33AsInt64(r.buf[r.pos:])
	if err != nil {
		return 0, r.lebError(err, "s33")
	}
	r.pos += n
	return v, nil
}

// S64 reads a signed 64-bit LEB128 number.
func (r *Reader) S64() (int64, error) {
	b := r.buf[r.pos:]
	if len(b) > 0 && b[0] < 0x80 {
		r.pos++
		return int64(int8(b[0]<<1) >> 1), nil
	}
	return r.s64Slow()
}

func (r *Reader) s64Slow() (int64, error) {
	v, n, err := DecodeInt64(r.buf[r.pos:])
	if err != nil {
		return 0, r.lebError(err, "s64")
	}
	r.pos += n
	return v, nil
}

// Name reads a name: a u32 length and that many bytes of UTF-8. The
// result aliases the reader's slice.
func (r *Reader) Name() ([]byte, error) {
	off := r.Offset()
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	b, err := r.Bytes(uint64(n))
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, Errorf(off, "name is not valid UTF-8")
	}
	return b, nil
}

// VecCount reads a vector's item count and refuses one whose items, of at
// least minSize bytes each, cannot fit in the bytes left: so a count can
// size nothing beyond the input.
func (r *Reader) VecCount(minSize int) (uint32, error) {
	off := r.Offset()
	n, err := r.U32()
	if err != nil {
		return 0, err
	}
	if minSize > 0 && uint64(n) > uint64(r.Len())/uint64(minSize) {
		return 0, Errorf(off, "vector of %d items of at least %d bytes in %d bytes", n, minSize, r.Len())
	}
	return n, nil
}
