package precheck

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// dataImage is the memory image the active segments of wasm write, applied
// in order from zero as instantiation applies them, and the number of
// segments.
func dataImage(t testing.TB, wasm []byte) (image []byte, segments int) {
	t.Helper()
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return image, segments
		}
		if s.ID != wasmbin.SectionIDData {
			continue
		}
		r := s.Reader()
		n, _ := r.U32()
		segments = int(n)
		for ; n > 0; n-- {
			seg, err := r.ReadDataSegment()
			if err != nil {
				t.Fatal(err)
			}
			off, ok := constOffset(&seg)
			if !ok {
				continue
			}
			if end := int(off) + len(seg.Init); end > len(image) {
				image = append(image, make([]byte, end-len(image))...)
			}
			copy(image[off:], seg.Init)
		}
	}
}

// activeSeg is an active data segment of memory 0 at offset off.
func activeSeg(off int64, init []byte) []byte {
	return cat([]byte{0x00, wasmbin.OpcodeI32Const}, wasmbin.AppendInt64(nil, int64(int32(uint32(off)))),
		[]byte{wasmbin.OpcodeEnd}, leb(uint64(len(init))), init)
}

// TestDataMerge: consecutive segments up to mergeGap zeros apart merge
// into one writing the same memory (as read from the segments and as
// wazero instantiates it); a wider gap, a segment before the end of an
// earlier one, one whose gap an earlier segment wrote into, a passive one
// and one at a global's offset do not merge; a module with a data count
// section is left alone.
func TestDataMerge(t *testing.T) {
	fill := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	var segs [][]byte
	off := int64(16)
	for i := range 200 {
		segs = append(segs, activeSeg(off, fill(40+i%7, byte(i+1))))
		off += int64(40+i%7) + int64(i%(mergeGap+1)) // gaps 0..mergeGap
	}
	base := off + 100
	segs = append(segs,
		activeSeg(base-60, fill(8, 0xaa)),          // before the end of the one before: no merge
		activeSeg(base+12, fill(4, 0xee)),          // E, in the gap between the next two
		activeSeg(base, fill(10, 0xa1)),            // A
		activeSeg(base+20, fill(10, 0xb1)),         // B: joining A would clobber E with zeros
		activeSeg(base+40, fill(10, 0xc1)),         // gap 10 from B, the end of all so far: joins B
		cat([]byte{0x01}, leb(3), []byte{1, 2, 3}), // passive
		activeSeg(base+80, fill(6, 0xd1)),          // after a passive one: a new run
		activeSeg(base+90, fill(6, 0xd2)),          // joins it
	)
	g := gen{mems: [][]byte{{0x00, 0x02}}, exports: [][]byte{memExport}, datas: segs}
	in := g.bytes()
	st, err := Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Check(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	imgIn, nIn := dataImage(t, in)
	imgOut, nOut := dataImage(t, out)
	if !bytes.Equal(imgIn, imgOut) {
		t.Fatal("the merged segments write another memory image")
	}
	if want := 199 + 2; st.DataMerged != want || nOut != nIn-want {
		t.Fatalf("%d segments became %d, %d merged; want %d merged", nIn, nOut, st.DataMerged, want)
	}
	if again, err := Measure(out); err != nil || again.DataMerged != 0 {
		t.Fatalf("the output merges again: %+v, %v", again, err)
	}
	ctx := context.Background()
	memory := func(wasm []byte) []byte {
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		m, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.ExportedMemory("memory").Read(0, 2<<16)
		return bytes.Clone(b)
	}
	if !bytes.Equal(memory(in), memory(out)) {
		t.Fatal("wazero instantiates the merged module to another memory")
	}

	// A data count section: nothing merges (memory.init may name segments).
	withCount := module(section(wasmbin.SectionIDMemory, vec([]byte{0x00, 0x02})),
		section(wasmbin.SectionIDDataCount, leb(uint64(len(segs)))), section(wasmbin.SectionIDData, vec(segs...)))
	if out, err := Check(withCount, Limits{}); err != nil || &out[0] != &withCount[0] {
		t.Fatalf("a module with a data count section was rewritten (%v)", err)
	}
	// A segment at a global's offset stops merging after it.
	glob := cat([]byte{0x00, wasmbin.OpcodeGlobalGet, 0x00, wasmbin.OpcodeEnd}, leb(1), []byte{9})
	g2 := gen{mems: [][]byte{{0x00, 0x02}}, globals: [][]byte{{0x7f, 0x00, wasmbin.OpcodeI32Const, 0x00, wasmbin.OpcodeEnd}},
		datas: append([][]byte{glob}, segs...)}
	if st, err := Measure(g2.bytes()); err != nil || st.DataMerged != 0 {
		t.Fatalf("segments merged after one at a global's offset: %+v, %v", st, err)
	}
	// Fewer than minMerges merges: the input itself.
	g3 := gen{mems: [][]byte{{0x00, 0x02}}, datas: segs[:minMerges]}
	if in := g3.bytes(); func() bool { out, err := Check(in, Limits{}); return err != nil || &out[0] != &in[0] }() {
		t.Fatal("a module with few merges was rewritten")
	}
}
