package memimage_test

import (
	"bytes"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/memimage"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// FuzzSplit: Split never panics, and a module it splits is one wazero
// instantiates exactly when it instantiates the original, to a memory that
// holds nothing until the image is in place, which then holds what the
// original's does.
func FuzzSplit(f *testing.F) {
	mem := section(wasmbin.SectionIDMemory, memory(0, 3))
	f.Add(module(mem, section(wasmbin.SectionIDData, active(7, fill(memimage.MinData, 1)))))
	f.Add(module(mem, section(wasmbin.SectionIDData, passive(fill(3, 4)), active(page, fill(page, 2)), active(10, fill(page+20, 3)))))
	f.Add(module(section(wasmbin.SectionIDMemory, memory(1, 2, 2)), section(wasmbin.SectionIDData, active(0, fill(2*page, 5)))))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		stripped, image, ok := memimage.Split(wasm)
		if !ok {
			return
		}
		sections, err := wasmbin.NewSections(stripped)
		if err != nil {
			t.Fatal(err)
		}
		var s wasmbin.Section
		for more := true; more; {
			if more, err = sections.Next(&s); err != nil {
				t.Fatalf("the stripped module does not decode: %v", err)
			}
		}
		if _, _, again := memimage.Split(stripped); again {
			t.Fatal("the stripped module still has data to move")
		}
		want, errWant := instantiate(wasm)
		got, errGot := instantiate(stripped)
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("original: %v; stripped: %v", errWant, errGot)
		}
		if errWant != nil {
			return
		}
		if len(got) != len(want) || len(image) > len(got) || !bytes.Equal(got, make([]byte, len(got))) {
			t.Fatalf("stripped memory of %d bytes (zero: %v), original %d, image %d", len(got), bytes.Equal(got, make([]byte, len(got))), len(want), len(image))
		}
		copy(got, image)
		if !bytes.Equal(got, want) {
			t.Fatal("the stripped memory with the image in place differs from the original's")
		}
	})
}
