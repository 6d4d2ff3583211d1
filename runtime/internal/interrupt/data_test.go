package interrupt

import (
	"bytes"
	"maps"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// dataImage applies a data section's segments to zeroed memory: the
// non-zero bytes by address, the end of the furthest segment (an
// instantiation fails when it is past the memory), the segment count; ok
// is false when a segment is not active in memory 0 at an i32.const offset.
func dataImage(tb testing.TB, body []byte) (image map[uint64]byte, maxEnd uint64, n uint32, ok bool) {
	tb.Helper()
	r := newReader(body)
	n = r.u32()
	image = map[uint64]byte{}
	for i := n; i > 0; i-- {
		if r.u32() != 0 || r.byte() != wasmbin.OpcodeI32Const {
			return nil, 0, n, false
		}
		off, err := r.S32()
		if err != nil || r.byte() != wasmbin.OpcodeEnd {
			tb.Fatalf("data segment offset: %v", err)
		}
		init := r.bytes(int(r.u32()))
		at := uint64(uint32(off))
		for j, b := range init {
			if b == 0 {
				delete(image, at+uint64(j))
			} else {
				image[at+uint64(j)] = b
			}
		}
		maxEnd = max(maxEnd, at+uint64(len(init)))
	}
	return image, maxEnd, n, true
}

// checkDataEquivalent: out is in, or its segments merged into fewer that
// initialise memory to the same bytes and reach as far.
func checkDataEquivalent(tb testing.TB, in, out []byte) {
	tb.Helper()
	if bytes.Equal(in, out) {
		return
	}
	inImage, inEnd, inN, ok := dataImage(tb, in)
	if !ok {
		tb.Fatal("a data section that mergeData must leave alone changed")
	}
	outImage, outEnd, outN, ok := dataImage(tb, out)
	if !ok || outN >= inN || outEnd != inEnd || !maps.Equal(inImage, outImage) {
		tb.Fatalf("data segments: %d -> %d, reaching %d -> %d: not the same memory (or not fewer segments)", inN, outN, inEnd, outEnd)
	}
}

// dataSection assembles a data section of active memory-0 segments.
func dataSection(segs ...struct {
	off  int32
	init string
}) []byte {
	body := wasmbin.AppendUint64(nil, uint64(len(segs)))
	for _, s := range segs {
		body = append(body, 0, wasmbin.OpcodeI32Const)
		body = wasmbin.AppendInt64(body, int64(s.off))
		body = append(body, wasmbin.OpcodeEnd)
		body = wasmbin.AppendUint64(body, uint64(len(s.init)))
		body = append(body, s.init...)
	}
	return body
}

type seg = struct {
	off  int32
	init string
}

func segmentCount(tb testing.TB, body []byte) uint32 {
	tb.Helper()
	return newReader(body).u32()
}

func TestMergeData(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want uint32 // segments after
	}{
		{"adjacent and near", dataSection(seg{0, "ab"}, seg{2, "cd"}, seg{10, "ef"}, seg{10 + 2 + maxDataGap, "gh"}), 1},
		{"a gap too wide", dataSection(seg{0, "ab"}, seg{2 + maxDataGap + 1, "cd"}), 2},
		// The gap between the second and third holds the first: filling it
		// with zeros would erase "ab".
		{"a gap holding an earlier segment", dataSection(seg{4, "ab"}, seg{0, "xy"}, seg{8, "cd"}), 3},
		// Two ascending runs, as a Go guest's: each merged.
		{"two runs", dataSection(seg{100, "a"}, seg{102, "b"}, seg{0, "c"}, seg{3, "d"}), 2},
		{"overlapping", dataSection(seg{0, "abcd"}, seg{2, "xy"}), 2},
		{"negative offset", dataSection(seg{-8, "ab"}, seg{-6, "cd"}), 2},
		{"one segment", dataSection(seg{0, "ab"}), 1},
		{"empty segments", dataSection(seg{0, ""}, seg{0, "ab"}, seg{2, ""}, seg{2, "cd"}), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := mergeData(c.in)
			if n := segmentCount(t, out); n != c.want {
				t.Errorf("%d segments, want %d", n, c.want)
			}
			checkDataEquivalent(t, c.in, out)
		})
	}
	// A passive segment (flags 1) or one for memory 1 (flags 2): left as is.
	passive := append(dataSection(seg{0, "ab"}, seg{2, "cd"}), 1, 2, 'x', 'y')
	passive[0]++
	explicit := append(dataSection(seg{0, "ab"}), 2, 1, wasmbin.OpcodeI32Const, 2, wasmbin.OpcodeEnd, 2, 'c', 'd')
	explicit[0]++
	for _, body := range [][]byte{passive, explicit} {
		if out := mergeData(body); !bytes.Equal(out, body) {
			t.Errorf("% x changed to % x", body, out)
		}
	}
}

// A module with a data count section (which memory.init and data.drop
// need, naming segments by index) keeps its segments; one without has
// them merged, in both modes.
func TestInstrumentMergesDataUnlessCounted(t *testing.T) {
	data := dataSection(seg{0, "ab"}, seg{2, "cd"})
	base := []([]byte){sec(1, 1, 0x60, 0, 0), sec(3, 1, 0), sec(5, 1, 0, 1)}
	code := sec(10, 1, 2, 0, 0x0b)
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		for _, counted := range []bool{false, true} {
			secs := append([][]byte{}, base...)
			if counted {
				secs = append(secs, sec(12, 2))
			}
			secs = append(secs, code, sec(11, data...))
			out, err := InstrumentWith(mod(secs...), f)
			if err != nil {
				t.Fatalf("flag %d: %v", f, err)
			}
			var got []byte
			for _, s := range rawSections(t, out) {
				if s.id == wasmbin.SectionIDData {
					got = s.body
				}
			}
			want := uint32(1)
			if counted {
				want = 2
			}
			if n := segmentCount(t, got); n != want {
				t.Errorf("flag %d, data count section %v: %d segments, want %d", f, counted, n, want)
			}
		}
	}
}

// The Go guest's tens of thousands of segments become a few, initialising
// memory to the same bytes (the Go guest tests run the result).
func TestInstrumentMergesGoGuestData(t *testing.T) {
	wasm := goGuest(t)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	var in, got []byte
	for _, s := range rawSections(t, wasm) {
		if s.id == wasmbin.SectionIDData {
			in = s.body
		}
	}
	for _, s := range rawSections(t, out) {
		if s.id == wasmbin.SectionIDData {
			got = s.body
		}
	}
	checkDataEquivalent(t, in, got)
	t.Logf("data segments %d -> %d, section %d -> %d bytes", segmentCount(t, in), segmentCount(t, got), len(in), len(got))
	if n := segmentCount(t, got); n > 100 {
		t.Errorf("%d segments left", n)
	}
}
