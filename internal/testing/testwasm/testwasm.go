// Package testwasm builds WebAssembly modules for the engines' tests,
// assembled by hand so the tests need no toolchain.
package testwasm

// BigModule is a valid module of n functions of about k instructions each,
// which takes an engine seconds to compile: (func (param i32) (result i32))
// adding constants to its parameter, with a memory export. The compile
// tests use it to have a compile in progress when a deadline passes.
func BigModule(n, k int) []byte {
	uleb := func(v int) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				c |= 0x80
			}
			b = append(b, c)
			if v == 0 {
				return b
			}
		}
	}
	section := func(id byte, payload []byte) []byte {
		return append(append([]byte{id}, uleb(len(payload))...), payload...)
	}
	var body []byte
	body = append(body, 0x00) // no locals
	for j := 0; j < k; j++ {
		// local.get 0; i32.const j; i32.add; local.set 0 — with a branch
		// now and then, so the compiler has blocks to work on.
		body = append(body, 0x20, 0x00, 0x41)
		body = append(body, uleb(j&0x3f)...)
		body = append(body, 0x6a, 0x21, 0x00)
		if j%16 == 0 {
			body = append(body, 0x20, 0x00, 0x04, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00, 0x0b) // if: local0--
		}
	}
	body = append(body, 0x20, 0x00, 0x0b)
	code := uleb(n)
	funcs := uleb(n)
	for j := 0; j < n; j++ {
		code = append(code, uleb(len(body))...)
		code = append(code, body...)
		funcs = append(funcs, 0x00)
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, []byte{0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f})...)
	out = append(out, section(3, funcs)...)
	out = append(out, section(5, []byte{0x01, 0x00, 0x01})...)
	out = append(out, section(7, []byte{0x01, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00})...)
	out = append(out, section(10, code)...)
	return out
}
