package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The binary framing of http_do_bin (SPEC.md §6.3). Every integer is an
// unsigned 32-bit little-endian number; a string or byte run is its length
// followed by its bytes:
//
//	request:  method, url, header count, (name, value) × count, body
//	response: status, header count, (name, value) × count, body
//
// A header field with several values is repeated, once per value. A frame
// ends exactly after the body: missing bytes, a length past the end or
// bytes after the body make it invalid. The codec lives in abi because
// both sides use it: the guest SDK encodes requests and decodes responses,
// the host the reverse.

// ErrFrame marks a malformed http_do_bin frame.
var ErrFrame = errors.New("malformed http frame")

// frameHeaderPairMin is the fewest bytes one header field takes (two
// empty strings), which bounds a declared count before anything is
// allocated for it.
const frameHeaderPairMin = 8

// AppendHTTPRequestFrame appends the frame of r to dst.
func AppendHTTPRequestFrame(dst []byte, r *HTTPRequest) []byte {
	dst = appendFrameString(dst, r.Method)
	dst = appendFrameString(dst, r.URL)
	dst = appendFrameHeader(dst, r.Header)
	return appendFrameBytes(dst, r.Body)
}

// HTTPRequestFrameSize is the length of r's frame, so a caller can size
// its buffer once.
func HTTPRequestFrameSize(r *HTTPRequest) int {
	return 4 + len(r.Method) + 4 + len(r.URL) + frameHeaderSize(r.Header) + 4 + len(r.Body)
}

// ParseHTTPRequestFrame decodes a request frame. Header names are kept as
// they were sent; the value slices and Body alias b.
func ParseHTTPRequestFrame(b []byte) (*HTTPRequest, error) {
	d := frameDecoder{b: b}
	r := &HTTPRequest{}
	r.Method = string(d.bytes("method"))
	r.URL = string(d.bytes("url"))
	r.Header = d.header()
	r.Body = d.bytes("body")
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

// AppendHTTPResponseFrame appends the frame of r to dst.
func AppendHTTPResponseFrame(dst []byte, r *HTTPResponse) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.Status))
	dst = appendFrameHeader(dst, r.Header)
	return appendFrameBytes(dst, r.Body)
}

// HTTPResponseFrameSize is the length of r's frame.
func HTTPResponseFrameSize(r *HTTPResponse) int {
	return 4 + frameHeaderSize(r.Header) + 4 + len(r.Body)
}

// ParseHTTPResponseFrame decodes a response frame. Body aliases b.
func ParseHTTPResponseFrame(b []byte) (*HTTPResponse, error) {
	d := frameDecoder{b: b}
	r := &HTTPResponse{}
	status := d.u32("status")
	if d.err == nil && (status < 100 || status > 999) {
		d.fail("status %d is not a three-digit code", status)
	}
	r.Status = int(status)
	r.Header = d.header()
	r.Body = d.bytes("body")
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

func appendFrameString(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendFrameBytes(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

func appendFrameHeader(dst []byte, h map[string][]string) []byte {
	n := 0
	for _, vs := range h {
		n += len(vs)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	for k, vs := range h {
		for _, v := range vs {
			dst = appendFrameString(dst, k)
			dst = appendFrameString(dst, v)
		}
	}
	return dst
}

func frameHeaderSize(h map[string][]string) int {
	n := 4
	for k, vs := range h {
		for _, v := range vs {
			n += 8 + len(k) + len(v)
		}
	}
	return n
}

// frameDecoder reads a frame front to back. The first failure sticks: later
// reads return zero values, so a parser reads every field and checks once.
type frameDecoder struct {
	b   []byte
	off int
	err error
}

func (d *frameDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrFrame, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *frameDecoder) u32(what string) uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 4 {
		d.fail("%s: want 4 bytes, %d left", what, len(d.b)-d.off)
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *frameDecoder) bytes(what string) []byte {
	n := d.u32(what + " length")
	if d.err != nil {
		return nil
	}
	// Compared as uint64: a length near 2^32 must not wrap on 32-bit
	// targets (the guest is wasm32).
	if uint64(n) > uint64(len(d.b)-d.off) {
		d.fail("%s of %d bytes, %d left", what, n, len(d.b)-d.off)
		return nil
	}
	v := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return v
}

func (d *frameDecoder) header() map[string][]string {
	n := d.u32("header count")
	if d.err != nil || n == 0 {
		return nil
	}
	if uint64(n) > uint64(len(d.b)-d.off)/frameHeaderPairMin {
		d.fail("%d header fields cannot fit in the %d bytes left", n, len(d.b)-d.off)
		return nil
	}
	// First pass: check every length and find where the fields end, so
	// that their bytes become one string and the values share one slice —
	// a handful of allocations instead of three per field (it matters in
	// a guest, where each costs a microsecond).
	start := d.off
	for range n {
		d.bytes("header name")
		d.bytes("header value")
		if d.err != nil {
			return nil
		}
	}
	all := string(d.b[start:d.off])
	vals := make([]string, n)
	h := make(map[string][]string, min(n, 64))
	off := 0
	next := func() string {
		l := int(uint32(all[off]) | uint32(all[off+1])<<8 | uint32(all[off+2])<<16 | uint32(all[off+3])<<24)
		s := all[off+4 : off+4+l]
		off += 4 + l
		return s
	}
	for i := range vals {
		k := next()
		vals[i] = next()
		if vs, ok := h[k]; ok {
			h[k] = append(vs, vals[i]) // capped below: a repeat copies, never overwrites vals
		} else {
			h[k] = vals[i : i+1 : i+1]
		}
	}
	return h
}

func (d *frameDecoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d bytes after the body", len(d.b)-d.off)
	}
	return d.err
}
