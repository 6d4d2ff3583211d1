// Package memimage moves a module's active data segments out of the module
// into a memory image: the bytes its memory holds once instantiation has
// written them. An engine that maps the image copy-on-write as the start of
// every instance's memory (mmapmem.Image) gives each instance a private copy
// of only the pages it writes; the rest stay shared between every instance
// of the module. A Go guest's data (type data, strings, tables: 1 to 4 MiB)
// is mostly read, never written, so this saves most of it per instance.
//
// Split is pure and engine-free: it decodes, it does not validate (the
// engine validates the module it returns, like any other).
package memimage

import (
	"bytes"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// wasmPageSize is a WebAssembly memory page.
const wasmPageSize = 64 << 10

// MinData is the fewest bytes of data Split moves into an image: below it
// the per-instance saving is not worth a mapping.
const MinData = 64 << 10

// MaxImage is the largest image Split makes. An instance's first write to a
// page of its image is a copy-on-write fault taken in the guest's compiled
// code, where wazero cannot be preempted and a host garbage collection
// waits for it: 21 µs a page on CI's VMs, so a guest writing once to each
// page of a 31 MiB image held the collector for ~170 ms. 8 MiB is 2,048
// pages (~43 ms there) and twice a Go guest's data; a module with more
// keeps its segments, which the engine writes at instantiation, in host
// code, into pages faulted in beforehand (mmapmem).
const MaxImage = 8 << 20

// maxSparse bounds how much larger than its data an image may be (the
// zeros between segments): an image is sized by its last byte, and a module
// that places one byte far into a large memory should not cost a mapping
// that large.
const maxSparse = 2

// Split returns the module with every active data segment emptied and the
// image those segments write, or ok false and nothing when the module does
// not qualify. A module qualifies when it defines (does not import) its
// one memory, that memory is not shared and not 64-bit, every active
// segment writes memory 0 at an i32.const offset and lies within the
// memory's minimum size, the segments hold at least MinData bytes, and the
// image is at most maxSparse times (plus a page) the data it holds and at
// most MaxImage bytes.
//
// The image is what instantiating the module writes: the segments in
// order, a later one overwriting an earlier where they overlap, zeros
// elsewhere, up to the last byte written. Its length is not rounded.
//
// The module keeps its number of segments, each active one now writing
// nothing at offset 0, so segment indices (memory.init, data.drop, the data
// count section) and passive segments are unchanged. An emptied active
// segment behaves as the original does after instantiation, which drops
// every active segment: memory.init of any length but 0 traps. Since every
// original segment was in bounds, instantiation fails for neither or for
// the same reason, and the memory starts with the same bytes once the
// image is in place.
func Split(wasm []byte) (stripped, image []byte, ok bool) {
	sections, err := wasmbin.NewSections(wasm)
	if err != nil {
		return nil, nil, false
	}
	var (
		memories int
		minBytes uint64
		data     wasmbin.Section
		haveData bool
	)
	var s wasmbin.Section
	for {
		more, err := sections.Next(&s)
		if err != nil {
			return nil, nil, false
		}
		if !more {
			break
		}
		switch s.ID {
		case wasmbin.SectionIDImport:
			if imported, err := importsMemory(s); err != nil || imported {
				return nil, nil, false
			}
		case wasmbin.SectionIDMemory:
			r := s.Reader()
			n, err := r.U32()
			if err != nil || n != 1 {
				return nil, nil, false
			}
			l, err := r.ReadLimits()
			if err != nil || l.Shared() || l.Is64() || !r.Done() {
				return nil, nil, false
			}
			memories, minBytes = 1, l.Min*wasmPageSize
		case wasmbin.SectionIDData:
			data, haveData = s, true
		}
	}
	if memories != 1 || !haveData {
		return nil, nil, false
	}
	segments, size, held, ok := activeSegments(data, minBytes)
	if !ok || held < MinData || size > maxSparse*held+wasmPageSize || size > MaxImage {
		return nil, nil, false
	}
	image = make([]byte, size)
	for _, seg := range segments {
		copy(image[seg.off:], seg.init)
	}
	return replaceData(wasm, data, emptied(data)), image, true
}

// segment is an active segment's offset and bytes.
type segment struct {
	off  uint64
	init []byte
}

// activeSegments returns the active segments of a data section, the end of
// the last byte any writes (size) and the bytes they hold, or ok false if
// one is not in memory 0 at an i32.const offset within minBytes.
func activeSegments(data wasmbin.Section, minBytes uint64) (segs []segment, size, held uint64, ok bool) {
	r := data.Reader()
	n, err := r.U32()
	if err != nil {
		return nil, 0, 0, false
	}
	for ; n > 0; n-- {
		seg, err := r.ReadDataSegment()
		if err != nil {
			return nil, 0, 0, false
		}
		if seg.Passive {
			continue
		}
		off, isConst := i32Const(seg.OffsetExpr)
		if seg.Memory != 0 || !isConst {
			return nil, 0, 0, false
		}
		end := off + uint64(len(seg.Init))
		if end > minBytes {
			return nil, 0, 0, false
		}
		segs = append(segs, segment{off, seg.Init})
		size, held = max(size, end), held+uint64(len(seg.Init))
	}
	if !r.Done() {
		return nil, 0, 0, false
	}
	return segs, size, held, true
}

// i32Const returns the offset of a constant expression that is exactly
// i32.const n; end, read as the unsigned address it is.
func i32Const(expr []byte) (uint64, bool) {
	r := wasmbin.NewReader(expr, 0)
	if op, err := r.Byte(); err != nil || op != wasmbin.OpcodeI32Const {
		return 0, false
	}
	v, err := r.S32()
	if err != nil {
		return 0, false
	}
	if op, err := r.Byte(); err != nil || op != wasmbin.OpcodeEnd || !r.Done() {
		return 0, false
	}
	return uint64(uint32(v)), true
}

// importsMemory reports whether an import section imports a memory.
func importsMemory(s wasmbin.Section) (bool, error) {
	r := s.Reader()
	n, err := r.U32()
	if err != nil {
		return false, err
	}
	for ; n > 0; n-- {
		imp, err := r.ReadImport()
		if err != nil {
			return false, err
		}
		if imp.Kind == wasmbin.ExternMemory {
			return true, nil
		}
	}
	return false, nil
}

// emptiedSegment is an active segment of memory 0 at i32.const 0 with no
// bytes: flags 0, the offset expression, a length of 0.
var emptiedSegment = []byte{0x00, wasmbin.OpcodeI32Const, 0x00, wasmbin.OpcodeEnd, 0x00}

// emptied returns the body of a data section whose active segments are
// emptied and whose passive ones are kept as they are. data was read
// without error by activeSegments.
func emptied(data wasmbin.Section) []byte {
	r := data.Reader()
	n, _ := r.U32()
	body := wasmbin.AppendUint32(nil, n)
	for ; n > 0; n-- {
		start := r.Offset() - data.BodyOffset
		seg, _ := r.ReadDataSegment()
		if seg.Passive {
			body = append(body, data.Body[start:r.Offset()-data.BodyOffset]...)
		} else {
			body = append(body, emptiedSegment...)
		}
	}
	return body
}

// replaceData returns wasm with the data section's body replaced by body.
func replaceData(wasm []byte, data wasmbin.Section, body []byte) []byte {
	var out bytes.Buffer
	out.Grow(data.Offset + 6 + len(body) + len(wasm) - data.End())
	out.Write(wasm[:data.Offset])
	out.WriteByte(wasmbin.SectionIDData)
	out.Write(wasmbin.AppendUint32(nil, uint32(len(body))))
	out.Write(body)
	out.Write(wasm[data.End():])
	return out.Bytes()
}
