package wasmbin

import (
	"errors"
	"strings"
	"testing"
)

func sections(t *testing.T, wasm []byte) ([]Section, error) {
	t.Helper()
	it, err := NewSections(wasm)
	if err != nil {
		return nil, err
	}
	var out []Section
	for {
		var s Section
		ok, err := it.Next(&s)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, s)
	}
}

const hdr = Magic + Version

func TestSections(t *testing.T) {
	// type (empty), custom, function (empty), custom, code (empty).
	wasm := []byte(hdr + "\x01\x01\x00" + "\x00\x02\x01a" + "\x03\x01\x00" + "\x00\x01\x00" + "\x0a\x01\x00")
	secs, err := sections(t, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var ids []byte
	for _, s := range secs {
		ids = append(ids, s.ID)
	}
	if string(ids) != "\x01\x00\x03\x00\x0a" {
		t.Fatalf("ids %x", ids)
	}
	if s := secs[1]; s.Offset != 11 || s.BodyOffset != 13 || string(s.Body) != "\x01a" {
		t.Errorf("custom section %+v", s)
	}
	name, r, err := secs[1].CustomName()
	if err != nil || string(name) != "a" || !r.Done() {
		t.Errorf("custom name %q %v", name, err)
	}
}

func TestSectionErrors(t *testing.T) {
	for _, c := range []struct{ name, wasm, want string }{
		{"empty", "", "no magic"},
		{"magic", "\x00asx\x01\x00\x00\x00", "no magic"},
		{"version", "\x00asm\x02\x00\x00\x00", "version"},
		{"overrun", hdr + "\x01\x05\x00", "overruns"},
		{"size leb", hdr + "\x01\x80", "u32"},
		{"unknown id", hdr + "\x0e\x00", "unknown section id 14"},
		{"duplicate", hdr + "\x01\x01\x00\x01\x01\x00", "duplicate type"},
		{"order", hdr + "\x03\x01\x00\x01\x01\x00", "type section out of order"},
		{"datacount after code", hdr + "\x0a\x01\x00\x0c\x01\x00", "out of order"},
		{"tag after global", hdr + "\x06\x01\x00\x0d\x01\x00", "out of order"},
	} {
		_, err := sections(t, []byte(c.wasm))
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// The tag section between memory and global, data count between
	// element and code: in order.
	if _, err := sections(t, []byte(hdr+"\x05\x01\x00\x0d\x01\x00\x06\x01\x00\x09\x01\x00\x0c\x01\x00\x0a\x01\x00\x0b\x01\x00")); err != nil {
		t.Errorf("tag and data count in order: %v", err)
	}
}

func TestReader(t *testing.T) {
	r := NewReader([]byte{0x03, 'a', 'b', 'c', 0x02, 0xff, 0xfe, 0x05, 1}, 100)
	n, err := r.Name()
	if err != nil || string(n) != "abc" || r.Offset() != 104 {
		t.Fatalf("name %q %v %d", n, err, r.Offset())
	}
	if _, err := r.Name(); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	r = NewReader([]byte{0x05, 1}, 0)
	if _, err := r.VecCount(1); err == nil {
		t.Errorf("a vector of 5 in 1 byte")
	}
	r = NewReader([]byte{0x02, 1, 2}, 7)
	if c, err := r.VecCount(1); err != nil || c != 2 {
		t.Errorf("vec %d %v", c, err)
	}
	if _, err := r.Bytes(3); err == nil {
		t.Errorf("Bytes past the end")
	}
	var e *Error
	if _, err := r.Bytes(3); !errors.As(err, &e) || e.Offset != 8 {
		t.Errorf("error offset: %v", err)
	}
	r = NewReader(nil, 0)
	if _, err := r.Byte(); err == nil {
		t.Errorf("Byte at the end")
	}
	if _, err := r.Sub(1); err == nil {
		t.Errorf("Sub past the end")
	}
}
