package metadata

import (
	"encoding/json"
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Write returns wasm with md as its metadata section: an existing
// metadata section is replaced in place (a second one is dropped), else
// the section is appended at the end. Every other byte of the module is
// kept as it was, so every other section — and the code, hence what the
// module does — is unchanged; the module's digest changes, which is why
// annotating comes before pinning or pushing.
func Write(wasm []byte, md *Metadata) ([]byte, error) {
	if err := md.Validate(); err != nil {
		return nil, err
	}
	payload, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	section := encodeCustom(SectionName, payload)

	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(wasm)+len(section))
	copied, placed := 0, false // copied: wasm[:copied] is in out (or dropped)
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil {
			return nil, fmt.Errorf("reading the module: %w", err)
		}
		if !ok {
			break
		}
		if s.ID != wasmbin.SectionIDCustom {
			continue
		}
		name, _, err := s.CustomName()
		if err != nil {
			return nil, fmt.Errorf("reading the module: %w", err)
		}
		if string(name) != SectionName {
			continue
		}
		out = append(out, wasm[copied:s.Offset]...)
		if !placed {
			out = append(out, section...)
			placed = true
		}
		copied = s.End()
	}
	out = append(out, wasm[copied:]...)
	if !placed {
		out = append(out, section...)
	}
	return out, nil
}

// encodeCustom encodes a custom section: id 0, the body's size, the name
// (its length, its bytes) and the payload.
func encodeCustom(name string, payload []byte) []byte {
	body := wasmbin.AppendUint32(nil, uint32(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	s := append([]byte{wasmbin.SectionIDCustom}, wasmbin.AppendUint32(nil, uint32(len(body)))...)
	return append(s, body...)
}
