package interrupt

import (
	"slices"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// maxDataGap is the most zero bytes mergeData writes to join two data
// segments. Go's linker ends a segment at every run of about 8 or more zero
// bytes, so a Go guest has tens of thousands of segments (41,082 for
// examples/fake, 100,000 for the Hetzner guest) mostly 8 to 20 bytes apart.
const maxDataGap = 64

// mergeData joins consecutive active data segments of memory 0 that lie in
// ascending order at most maxDataGap bytes apart into one segment, the gap
// filled with zeros. Every engine keeps per segment what it decoded and, in
// each instance, a reference (wazero: 24 bytes, for memory.init and
// data.drop), and evaluates each offset at instantiation: for a Go guest
// that is about 1 MiB of host memory per instance and milliseconds of every
// instantiation, for nothing (a Go guest's segments are all active).
//
// The result initialises memory to the same bytes: the segments are
// pairwise disjoint and a gap is filled only when no segment at all lies in
// it (a zero written there could otherwise overwrite an earlier segment's
// bytes), and memory starts zeroed. An instantiation fails exactly when the
// original's does: a run ends where its last segment ends. The caller
// leaves a module with a data count section alone (only such a module may
// use memory.init and data.drop, whose indices name segments); body is
// returned unchanged when anything else stands in the way: a passive
// segment, another memory, an offset that is not an i32.const below 2^31,
// overlapping segments.
func mergeData(body []byte) []byte {
	type segment struct {
		off  uint64
		init []byte
	}
	r := newReader(body)
	n := r.u32()
	segs := make([]segment, 0, min(n, uint32(len(body)/4)))
	for ; n > 0; n-- {
		if r.u32() != 0 || r.byte() != wasmbin.OpcodeI32Const {
			return body
		}
		off, err := r.S32()
		must(err)
		if off < 0 || r.byte() != wasmbin.OpcodeEnd {
			return body
		}
		segs = append(segs, segment{uint64(off), r.bytes(int(r.u32()))})
	}
	end(r)
	if len(segs) < 2 {
		return body
	}
	order := make([]int, len(segs)) // segment indices by offset
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case segs[a].off < segs[b].off:
			return -1
		case segs[a].off > segs[b].off:
			return 1
		}
		return 0
	})
	rank := make([]int, len(segs)) // position of each segment in order
	for k, i := range order {
		rank[i] = k
		if k > 0 {
			if p := segs[order[k-1]]; p.off+uint64(len(p.init)) > segs[i].off {
				return body // overlapping
			}
		}
	}
	var runs []segment
	var cur []byte
	start := segs[0].off
	for i := 1; i <= len(segs); i++ {
		prev := segs[i-1]
		if cur == nil {
			cur = append([]byte{}, prev.init...)
		}
		if i < len(segs) {
			s, end := segs[i], prev.off+uint64(len(prev.init))
			if rank[i] == rank[i-1]+1 && s.off >= end && s.off-end <= maxDataGap {
				cur = append(cur, make([]byte, s.off-end)...)
				cur = append(cur, s.init...)
				segs[i].off, segs[i].init = start, cur // the run so far, for the next step
				continue
			}
		}
		runs = append(runs, segment{start, cur})
		cur = nil
		if i < len(segs) {
			start = segs[i].off
		}
	}
	if len(runs) == len(segs) {
		return body
	}
	out := wasmbin.AppendUint64(nil, uint64(len(runs)))
	for _, s := range runs {
		out = append(out, 0, wasmbin.OpcodeI32Const)
		out = wasmbin.AppendInt64(out, int64(s.off))
		out = append(out, wasmbin.OpcodeEnd)
		out = wasmbin.AppendUint64(out, uint64(len(s.init)))
		out = append(out, s.init...)
	}
	return out
}
