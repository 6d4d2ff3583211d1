package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// moduleImports lists the function imports of a WebAssembly binary as
// "module.name" without compiling it: the capability check needs them, and
// compiling a Go guest a second time would cost a second.
func moduleImports(wasm []byte) ([][2]string, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly binary")
	}
	r := &reader{b: wasm, off: 8}
	var out [][2]string
	for r.off < len(r.b) {
		id := r.byte()
		size := int(r.u32())
		if r.err != nil || r.off+size > len(r.b) {
			return nil, fmt.Errorf("truncated section %d", id)
		}
		end := r.off + size
		if id == 2 { // import section
			n := int(r.u32())
			for i := 0; i < n && r.err == nil; i++ {
				mod, name := r.name(), r.name()
				switch kind := r.byte(); kind {
				case 0: // func: type index
					r.u32()
					out = append(out, [2]string{mod, name})
				case 1: // table: reftype, limits
					r.byte()
					r.limits()
				case 2: // memory: limits
					r.limits()
				case 3: // global: valtype, mutability
					r.byte()
					r.byte()
				default:
					return nil, fmt.Errorf("unknown import kind %d", kind)
				}
			}
			if r.err != nil {
				return nil, r.err
			}
			return out, nil
		}
		r.off = end
	}
	return out, r.err
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) u32() uint32 {
	if r.off >= len(r.b) {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = errors.New("bad LEB128")
		return 0
	}
	r.off += n
	return uint32(v)
}

func (r *reader) name() string {
	n := int(r.u32())
	if r.err != nil || r.off+n > len(r.b) {
		r.err = errors.New("bad name")
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
