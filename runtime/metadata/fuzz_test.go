package metadata

import (
	"bytes"
	"testing"
)

// FuzzRead: the section comes from a module nobody vetted; reading it
// must never panic, and what Write produced must read back as written,
// with every other byte of the module kept.
func FuzzRead(f *testing.F) {
	empty := []byte("\x00asm\x01\x00\x00\x00")
	f.Add(empty, []byte(`{"name":"x","version":"1.0.0","minHostVersion":"0.1.0"}`))
	f.Add(append(append([]byte{}, empty...), 0, 5, 4, 'a', 'b', 'c', 'd'), []byte(`{"name":"y","capabilities":["http"]}`))
	f.Add(append(append([]byte{}, empty...), 0, 0x80, 0x80), []byte(`null`))
	f.Fuzz(func(t *testing.T, wasm, payload []byte) {
		_, _ = Read(wasm) // must not panic on anything
		md, err := Parse(payload)
		if err != nil {
			return
		}
		out, err := Write(wasm, md)
		if err != nil {
			return
		}
		back, err := Read(out)
		if err != nil || back == nil || back.Name != md.Name || back.MinHostVersion != md.MinHostVersion {
			t.Fatalf("Write then Read: %+v, %v; wrote %+v", back, err, md)
		}
		if !bytes.HasPrefix(out, wasm[:8]) {
			t.Fatalf("the module header changed")
		}
	})
}
