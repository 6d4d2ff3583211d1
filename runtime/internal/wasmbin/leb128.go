package wasmbin

import "errors"

// LEB128 decoding errors (the Reader wraps them in an *Error with the
// offset).
var (
	// errLEBEOF: the bytes end inside the number.
	errLEBEOF = errors.New("unexpected end of input in a LEB128 number")
	// errLEBTooLong: more bytes than the type's width needs
	// (ceil(bits/7)).
	errLEBTooLong = errors.New("LEB128 number longer than its type allows")
	// errLEBOverflow: the last byte carries bits beyond the type's width
	// (unsigned), or bits that are not the sign's extension (signed).
	errLEBOverflow = errors.New("LEB128 number overflows its type")
)

// decodeUnsigned decodes an unsigned LEB128 number of at most bits bits
// from b and returns it and the number of bytes read.
func decodeUnsigned(b []byte, bits uint) (uint64, int, error) {
	maxBytes := int((bits + 6) / 7)
	var v uint64
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, 0, errLEBEOF
		}
		c := b[i]
		if i == maxBytes-1 {
			// The last byte may only carry the top bits of the width.
			used := bits - 7*uint(maxBytes-1)
			if c&0x80 != 0 {
				return 0, 0, errLEBTooLong
			}
			if c>>used != 0 {
				return 0, 0, errLEBOverflow
			}
		}
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errLEBTooLong // not reached: the last byte's check returns
}

// decodeSigned decodes a signed LEB128 number of at most bits bits.
func decodeSigned(b []byte, bits uint) (int64, int, error) {
	maxBytes := int((bits + 6) / 7)
	var v int64
	var shift uint
	for i := 0; i < maxBytes; i++ {
		if i >= len(b) {
			return 0, 0, errLEBEOF
		}
		c := b[i]
		if i == maxBytes-1 {
			if c&0x80 != 0 {
				return 0, 0, errLEBTooLong
			}
			// The bits from the sign bit (bit used-1 of the payload) up
			// to bit 6 must all equal it.
			used := bits - 7*uint(maxBytes-1)
			mask := byte(0x7f) &^ (1<<(used-1) - 1)
			if s := c & mask; s != 0 && s != mask {
				return 0, 0, errLEBOverflow
			}
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift // sign-extend
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, errLEBTooLong // not reached
}

// DecodeUint32 decodes an unsigned 32-bit LEB128 number (at most 5 bytes)
// and returns it and its length in bytes.
func DecodeUint32(b []byte) (uint32, int, error) {
	// The common case, one byte, without the loop.
	if len(b) > 0 && b[0] < 0x80 {
		return uint32(b[0]), 1, nil
	}
	v, n, err := decodeUnsigned(b, 32)
	return uint32(v), n, err
}

// DecodeUint64 decodes an unsigned 64-bit LEB128 number (at most 10
// bytes).
func DecodeUint64(b []byte) (uint64, int, error) { return decodeUnsigned(b, 64) }

// DecodeInt32 decodes a signed 32-bit LEB128 number (at most 5 bytes).
func DecodeInt32(b []byte) (int32, int, error) {
	v, n, err := decodeSigned(b, 32)
	return int32(v), n, err
}

// DecodeInt33AsInt64 decodes a signed 33-bit LEB128 number (at most 5
// bytes), the encoding of a block type's type index.
func DecodeInt33AsInt64(b []byte) (int64, int, error) { return decodeSigned(b, 33) }

// DecodeInt64 decodes a signed 64-bit LEB128 number (at most 10 bytes).
func DecodeInt64(b []byte) (int64, int, error) { return decodeSigned(b, 64) }

// AppendUint64 appends v's shortest unsigned LEB128 encoding to b.
func AppendUint64(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendUint32 appends v's shortest unsigned LEB128 encoding to b.
func AppendUint32(b []byte, v uint32) []byte { return AppendUint64(b, uint64(v)) }

// AppendInt64 appends v's shortest signed LEB128 encoding to b.
func AppendInt64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// SizeUint64 is the length of v's shortest unsigned LEB128 encoding.
func SizeUint64(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
