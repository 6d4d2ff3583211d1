package precheck

import (
	"cmp"
	"slices"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Merging data segments. The Go linker splits a guest's data at every run
// of 18 or more zero bytes, up to 100,000 segments (the Hetzner guest:
// 53,531 segments for 1.3 MB), and an engine pays for each segment on
// every load, warm cache or not: wazero decodes, validates and evaluates
// the offset of every one, and copies each into every new instance (about
// 35 ms of the Hetzner guest's warm load). Check therefore merges
// consecutive active segments separated by at most mergeGap zero bytes into
// one segment that writes those zeros too (225 segments for that guest, 100,000 to 212 for hcloud-go).
//
// Writing zeros where no segment wrote is invisible, memory starting
// zeroed, unless a segment applied earlier wrote there: so a segment only
// joins the one before it when it starts at or after the end of the run
// it would join and no earlier run covers the gap between them (segments
// are applied in order; a later one writing into a merged gap overwrites
// the zeros, as it overwrote nothing before). The Go linker writes two
// sorted groups, the second filling holes of the first, which is why the
// runs are remembered, not just the highest end. Only segments of memory 0
// at an i32.const offset merge; a segment at a global's offset, whose
// extent is unknown, stops all merging after it, as do more than maxSpans
// runs, and a module with a data count section (which memory.init and
// data.drop need, and which numbers segments) is left as it is. The zeros
// written are bounded by the data bytes read, so a module's data at most
// doubles.
const (
	mergeGap  = 32
	minMerges = 64   // fewer merges are not worth copying the module
	maxSpans  = 4096 // runs remembered; the Go guests have a few hundred
)

// span is the extent [lo, hi) of a run of merged segments.
type span struct{ lo, hi int64 }

// dataMerger decides, segment by segment, which segments join the one
// before. Its memory is bounded by maxSpans, not by the segments, and the
// rewrite replays it.
type dataMerger struct {
	stopped     bool   // a segment of unknown extent was seen, or too many runs
	open        bool   // cur is a run the next segment may join
	cur         span   // the open run
	spans       []span // the closed runs, disjoint (overlapping ones united) and sorted
	data, zeros int64  // data bytes read; zero bytes the merges write
	merges      int    // segments that join the one before
}

// constOffset is the offset of an active segment of memory 0 at an
// i32.const offset.
func constOffset(seg *wasmbin.DataSegment) (int64, bool) {
	e := seg.OffsetExpr
	if seg.Passive || seg.Memory != 0 || len(e) < 3 || e[0] != wasmbin.OpcodeI32Const || e[len(e)-1] != wasmbin.OpcodeEnd {
		return 0, false
	}
	v, n, err := wasmbin.DecodeInt32(e[1 : len(e)-1])
	if err != nil || n != len(e)-2 {
		return 0, false
	}
	return int64(uint32(v)), true
}

// next reports whether seg joins the segment before it, and the zeros
// between them.
func (d *dataMerger) next(seg *wasmbin.DataSegment) (joins bool, gap int64) {
	d.data += int64(len(seg.Init))
	if seg.Passive {
		d.close() // never applied at instantiation, but it stays in its place
		return false, 0
	}
	off, ok := constOffset(seg)
	if !ok {
		d.close()
		d.stopped = true
		return false, 0
	}
	end := off + int64(len(seg.Init))
	gap = off - d.cur.hi
	if !d.stopped && d.open && gap >= 0 && gap <= mergeGap && d.zeros+gap <= d.data && !d.covered(d.cur.hi, off) {
		d.merges++
		d.zeros += gap
		d.cur.hi = end
		return true, gap
	}
	d.close()
	d.cur, d.open = span{off, end}, true
	return false, 0
}

// covered reports whether a closed run overlaps [a, b).
func (d *dataMerger) covered(a, b int64) bool {
	if a >= b {
		return false
	}
	// The last span starting before b has the highest end of those that do.
	i, _ := slices.BinarySearchFunc(d.spans, b, func(s span, b int64) int { return cmp.Compare(s.lo, b) })
	return i > 0 && d.spans[i-1].hi > a
}

// close adds the open run to the closed ones, uniting it with those it
// overlaps or touches.
func (d *dataMerger) close() {
	if !d.open {
		return
	}
	d.open = false
	if d.stopped {
		return
	}
	s := d.cur
	i, _ := slices.BinarySearchFunc(d.spans, s.lo, func(t span, lo int64) int { return cmp.Compare(t.lo, lo) })
	j := i
	if i > 0 && d.spans[i-1].hi >= s.lo {
		i--
	}
	for j < len(d.spans) && d.spans[j].lo <= s.hi {
		j++
	}
	if i < j {
		s.lo, s.hi = min(s.lo, d.spans[i].lo), max(s.hi, d.spans[j-1].hi)
	}
	d.spans = slices.Replace(d.spans, i, j, s)
	if len(d.spans) > maxSpans {
		d.stopped, d.spans = true, nil
	}
}

// dataBody is the data section with the segments merged as dataMerger
// decides, replaying it over the section the check read.
func (c *checker) dataBody() []byte {
	s := c.dataSec
	r := s.Reader()
	n, _ := r.U32() // read by the check: no errors here
	body := wasmbin.AppendUint32(make([]byte, 0, len(s.Body)+int(c.merge.zeros)), n-uint32(c.merge.merges))
	var d dataMerger
	// The open run: its first segment (its encoding in the module, offset
	// and bytes) and, once another joined it, the merged bytes.
	var first wasmbin.DataSegment
	var merged []byte
	open, joined := false, false
	flush := func() {
		switch {
		case !open:
		case !joined:
			body = append(body, c.wasm[first.Offset:first.InitOffset+len(first.Init)]...)
		default:
			off, _ := constOffset(&first)
			body = append(body, 0x00, wasmbin.OpcodeI32Const)
			body = wasmbin.AppendInt64(body, int64(int32(uint32(off))))
			body = append(body, wasmbin.OpcodeEnd)
			body = wasmbin.AppendUint32(body, uint32(len(merged)))
			body = append(body, merged...)
		}
		open, joined = false, false
	}
	for i := uint32(0); i < n; i++ {
		seg, _ := r.ReadDataSegment()
		if joins, gap := d.next(&seg); joins {
			if !joined {
				merged = append(merged[:0], first.Init...)
				joined = true
			}
			merged = append(merged, make([]byte, gap)...)
			merged = append(merged, seg.Init...)
			continue
		}
		flush()
		first, open = seg, true
	}
	flush()
	return body
}
