package wasmbin

import (
	"errors"
	"math"
	"testing"
)

func TestDecodeUint32(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want uint32
		n    int
		err  error
	}{
		{[]byte{0x00}, 0, 1, nil},
		{[]byte{0x7f}, 127, 1, nil},
		{[]byte{0x80, 0x01}, 128, 2, nil},
		{[]byte{0x80, 0x00}, 0, 2, nil}, // not minimal, allowed
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, math.MaxUint32, 5, nil},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x00}, 0, 5, nil},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, 0, errLEBOverflow},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x4f}, 0, 0, errLEBOverflow},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, errLEBTooLong},
		{[]byte{0x80}, 0, 0, errLEBEOF},
		{nil, 0, 0, errLEBEOF},
	} {
		v, n, err := DecodeUint32(c.in)
		if !errors.Is(err, c.err) || (err == nil && (v != c.want || n != c.n)) {
			t.Errorf("DecodeUint32(%x) = %d, %d, %v; want %d, %d, %v", c.in, v, n, err, c.want, c.n, c.err)
		}
	}
}

func TestDecodeUint64(t *testing.T) {
	max := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	if v, n, err := DecodeUint64(max); err != nil || v != math.MaxUint64 || n != 10 {
		t.Errorf("max: %d %d %v", v, n, err)
	}
	over := append([]byte(nil), max...)
	over[9] = 0x02
	if _, _, err := DecodeUint64(over); !errors.Is(err, errLEBOverflow) {
		t.Errorf("overflow: %v", err)
	}
	long := append(append([]byte(nil), max[:9]...), 0x81, 0x00)
	if _, _, err := DecodeUint64(long); !errors.Is(err, errLEBTooLong) {
		t.Errorf("too long: %v", err)
	}
}

func TestDecodeSigned(t *testing.T) {
	for _, c := range []struct {
		bits uint
		in   []byte
		want int64
		err  error
	}{
		{32, []byte{0x00}, 0, nil},
		{32, []byte{0x7f}, -1, nil},
		{32, []byte{0x40}, -64, nil},
		{32, []byte{0x3f}, 63, nil},
		{32, []byte{0xc0, 0x00}, 64, nil},
		{32, []byte{0xff, 0xff, 0xff, 0xff, 0x07}, math.MaxInt32, nil},
		{32, []byte{0x80, 0x80, 0x80, 0x80, 0x78}, math.MinInt32, nil},
		{32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0, errLEBOverflow}, // 2^32-1: sign bits disagree
		{32, []byte{0x80, 0x80, 0x80, 0x80, 0x70}, 0, errLEBOverflow},
		{32, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 0, errLEBTooLong},
		{33, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, nil}, // a type index near the top
		{33, []byte{0x80, 0x80, 0x80, 0x80, 0x70}, -(1 << 32), nil},
		{33, []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, errLEBOverflow},
		{33, []byte{0x80, 0x80, 0x80, 0x80, 0x60}, 0, errLEBOverflow},
		{64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, math.MaxInt64, nil},
		{64, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, math.MinInt64, nil},
		{64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, errLEBOverflow},
		{64, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, errLEBTooLong},
		{64, []byte{0x80}, 0, errLEBEOF},
	} {
		v, _, err := decodeSigned(c.in, c.bits)
		if !errors.Is(err, c.err) || (err == nil && v != c.want) {
			t.Errorf("s%d(%x) = %d, %v; want %d, %v", c.bits, c.in, v, err, c.want, c.err)
		}
	}
}

func TestLEBRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		b := AppendInt64(nil, v)
		got, n, err := DecodeInt64(b)
		if err != nil || got != v || n != len(b) {
			t.Errorf("s64 %d: %x -> %d %d %v", v, b, got, n, err)
		}
	}
	for _, v := range []uint64{0, 127, 128, math.MaxUint32, math.MaxUint64} {
		b := AppendUint64(nil, v)
		got, n, err := DecodeUint64(b)
		if err != nil || got != v || n != len(b) || SizeUint64(v) != len(b) {
			t.Errorf("u64 %d: %x -> %d %d %v", v, b, got, n, err)
		}
	}
}

func TestReaderOneByteSigned(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		want, _, _ := DecodeInt64([]byte{byte(c)})
		r := NewReader([]byte{byte(c)}, 0)
		if v, err := r.S64(); err != nil || v != want {
			t.Errorf("S64(%#x) = %d, want %d", c, v, want)
		}
		r = NewReader([]byte{byte(c)}, 0)
		if v, err := r.S32(); err != nil || int64(v) != want {
			t.Errorf("S32(%#x) = %d, want %d", c, v, want)
		}
	}
}
