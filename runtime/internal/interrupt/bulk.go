package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Bulk memory instructions in pieces (both modes).
//
// An engine runs memory.fill, memory.copy or memory.init as one piece of
// compiled code (wazero: calls of Go's memmove from the guest's code, where
// the Go scheduler cannot stop it), so a check after one (place.go) comes
// only once the whole length is done: a fill of 256 MiB took 20-60 ms warm,
// a first touch of its pages (a page fault each) 250 ms on a quiet machine
// and over a second on a loaded one, during which a host GC waited to stop
// the world and an interrupted call went on. So the rewrite replaces each of
// them (a memory.init only when its data segment is longer than bulkChunk:
// none other can be) by
//
//	local.tee n; local.get n; i32.const bulkChunk; i32.gt_u
//	if (type P)   ;; (param i32 i32 i32): the instruction's operands
//	  call H      ;; the helper of this instruction and memories
//	else
//	  the instruction; (FlagBudget) the charge of n (bulkCharge)
//	end
//
// followed by the check that follows every bulk instruction. The length
// goes through the local that FlagBudget charges it from (bulkLocal; a
// FlagMemory function gets it too). An instruction of at most bulkChunk
// bytes, the common case (a Go guest's memmove and memclr), pays a compare
// and a branch. A longer one calls H, a function the rewrite appends to the
// module (after every other function, so that no index of the module moves;
// one per kind of instruction and memories or data segment used, of type
// P), which:
//
//   - traps before it writes anything when the instruction would: when
//     d+n (and, for a copy or an init, s+n) is beyond the memory (the data
//     segment's length as declared), it runs the instruction as it is, which
//     traps (a dropped segment traps in the first piece, before it writes);
//   - runs the instruction in pieces of at most bulkChunk bytes, ascending,
//     or descending for a copy within one memory whose destination is above
//     its source (an overlapping copy then reads nothing it wrote);
//   - runs a check charging splitCost before each piece (at its loop's
//     header), and charges the piece's length after it (FlagBudget, at
//     bulkShift as any bulk instruction): a yield or a stop on wazero, a
//     trap on wasmtime, comes within one piece.
//
// H is emitted instrumented, so the rewrite does not place its checks, and
// it is not counted on the stack (stack.go): it calls nothing but the
// yield, as any check does, and its frame is a few words above that of its
// caller, once: a function that did not call and now calls H stays
// uncounted. The weight of an instruction that may call H includes
// splitCost: the inline test and H's stretch before its first check.
const (
	// bulkChunk is the most bytes a piece covers (and the length up to
	// which an instruction runs whole): on a 2-core VM under load 6, a
	// fill of 256 KiB took 6 µs in the caches and 250 µs (700 µs at most)
	// when it touched its pages for the first time; 1 MiB took 1-1.5 ms
	// then.
	bulkChunk = 256 << 10
	// splitCost: the units of the code that may run between two checks
	// around a piece, but for the piece itself (charged by its length):
	// the inline test and the call, H's bounds test and one iteration of
	// its loop. Each check in H charges it.
	splitCost = 96
)

// Opcodes the helpers use that wasmbin does not name.
const (
	opI32LtU        = 0x49
	opI32GtU        = 0x4b
	opI64GtU        = 0x56
	opI64Shl        = 0x86
	opI64ExtendI32U = 0xad
)

// helperKey names a helper: the instruction (wasmbin.MiscMemoryFill, Copy
// or Init) and its immediates: fill, the memory; copy, the destination and
// source memories; init, the data segment and the memory.
type helperKey struct {
	sub  uint32
	a, b uint32
}

// bulkHelpers: the helpers the rewrite appends, in the order of their
// first use.
type bulkHelpers struct {
	// typ: the type index of P, (func (param i32 i32 i32)), which the
	// rewrite appends to the type section when it adds a helper.
	typ uint32
	// first: the function index of the first helper.
	first uint32
	keys  []helperKey
	index map[helperKey]uint32
	// data: the data section (nil without one), whose segments' lengths
	// (segs, once read) bound memory.init; dataCount: the module has a
	// data count section.
	data      []byte
	segs      []uint64
	read      bool
	dataCount bool
}

// splitType is the type section entry of P.
var splitType = []byte{wasmbin.TypeFormFunc, 3, wasmbin.ValueTypeI32, wasmbin.ValueTypeI32, wasmbin.ValueTypeI32, 0}

// split returns the function index of the helper of bulk instruction sub
// with immediates imm (as encoded), or false when it runs whole: a table
// instruction, or a memory.init of a segment no longer than bulkChunk.
func (w *rewriter) split(sub uint32, imm []byte) (uint32, bool) {
	r := newReader(imm)
	k := helperKey{sub: sub}
	switch sub {
	case wasmbin.MiscMemoryFill:
		k.a = r.u32()
	case wasmbin.MiscMemoryCopy, wasmbin.MiscMemoryInit:
		k.a, k.b = r.u32(), r.u32()
	default:
		return 0, false
	}
	if sub == wasmbin.MiscMemoryInit {
		if n, ok := w.bulk.segLen(k.a); !ok || n <= bulkChunk {
			return 0, false
		}
		if !w.bulk.dataCount {
			fail("memory.init without a data count section")
		}
	}
	h := &w.bulk
	if i, ok := h.index[k]; ok {
		return i, true
	}
	i := uint64(h.first) + uint64(len(h.keys))
	if i >= 1<<32-1 {
		fail("too many functions")
	}
	if h.index == nil {
		h.index = map[helperKey]uint32{}
	}
	h.index[k] = uint32(i)
	h.keys = append(h.keys, k)
	return uint32(i), true
}

// segLen is the length of data segment s, false if there is none.
func (h *bulkHelpers) segLen(s uint32) (uint64, bool) {
	if !h.read {
		h.read = true
		if h.data != nil {
			r := newReader(h.data)
			skip := rewriter{globals: noLimit, memories: noLimit}
			for n := r.u32(); n > 0; n-- {
				switch flags := r.u32(); flags {
				case 0:
					skip.constExpr(r)
				case 1:
				case 2:
					r.u32()
					skip.constExpr(r)
				default:
					fail(fmt.Sprintf("unknown data segment flags %d", flags))
				}
				h.segs = append(h.segs, uint64(len(r.bytes(int(r.u32())))))
			}
		}
	}
	if uint64(s) >= uint64(len(h.segs)) {
		return 0, false
	}
	return h.segs[s], true
}

// appendSplit appends an instruction's inline test (see above): op is the
// instruction as encoded, h its helper.
func (w *rewriter) appendSplit(out, op []byte, h uint32) []byte {
	l := uint64(w.bulkLocal)
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeLocalTee), l)
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeLocalGet), l)
	out = wasmbin.AppendInt64(append(out, wasmbin.OpcodeI32Const), bulkChunk)
	out = wasmbin.AppendInt64(append(out, opI32GtU, wasmbin.OpcodeIf), int64(w.bulk.typ))
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeCall), uint64(h))
	out = append(append(out, wasmbin.OpcodeElse), op...)
	if w.remap {
		out = append(out, w.charge...)
	}
	return append(out, wasmbin.OpcodeEnd)
}

// Helper locals: the parameters d, s (a fill's value) and n, and the
// piece's length k.
const (
	hD = iota
	hS
	hN
	hK
)

// helperBody is the code section entry (its size first) of the helper of
// k:
//
//	(func (param $d i32) (param $s i32) (param $n i32) (local $k i32)
//	  (if (i64.gt_u (i64.add (i64.extend_i32_u $d) (i64.extend_i32_u $n))
//	                (i64.shl (i64.extend_i32_u (memory.size M)) 16))
//	      ;; or $s + $n beyond the source memory, or the segment's length
//	    (then (op $d $s $n) (return)))   ;; it traps
//	  ;; a copy within one memory with $d > $s: the descending loop
//	  (loop
//	    the check charging splitCost
//	    (local.set $k (select $n bulkChunk (i32.lt_u $n bulkChunk)))
//	    (op $d $s $k)
//	    $d += $k; $s += $k (not a fill's value); $n -= $k
//	    the charge of $k (FlagBudget)
//	    (br_if 0 $n)))
//
// The descending loop takes $k from $n first, then copies $k bytes at $d +
// $n from $s + $n. The charge of a piece is followed by a check: the loop
// header's, or after the last piece the one after the call.
func (w *rewriter) helperBody(k helperKey) []byte {
	var op []byte // the instruction on the locals' operands
	op = wasmbin.AppendUint64(append(op, wasmbin.OpcodePrefixMisc), uint64(k.sub))
	dst := k.a // the memory written
	switch k.sub {
	case wasmbin.MiscMemoryFill:
		op = wasmbin.AppendUint64(op, uint64(k.a))
	case wasmbin.MiscMemoryCopy:
		op = wasmbin.AppendUint64(wasmbin.AppendUint64(op, uint64(k.a)), uint64(k.b))
	case wasmbin.MiscMemoryInit:
		op = wasmbin.AppendUint64(wasmbin.AppendUint64(op, uint64(k.a)), uint64(k.b))
		dst = k.b
	}
	get := func(b []byte, l uint32) []byte { return append(b, wasmbin.OpcodeLocalGet, byte(l)) }
	set := func(b []byte, l uint32) []byte { return append(b, wasmbin.OpcodeLocalSet, byte(l)) }
	// end64 pushes i64(l) + i64(n).
	end64 := func(b []byte, l uint32) []byte {
		b = append(get(b, l), opI64ExtendI32U)
		return append(get(b, hN), opI64ExtendI32U, wasmbin.OpcodeI64Add)
	}
	// size64 pushes the bytes of memory m.
	size64 := func(b []byte, m uint32) []byte {
		b = wasmbin.AppendUint64(append(b, wasmbin.OpcodeMemorySize), uint64(m))
		return append(b, opI64ExtendI32U, wasmbin.OpcodeI64Const, 16, opI64Shl)
	}
	b := []byte{1, 1, wasmbin.ValueTypeI32} // (local $k i32)
	b = append(size64(end64(b, hD), dst), opI64GtU)
	switch k.sub {
	case wasmbin.MiscMemoryCopy:
		b = append(size64(end64(b, hS), k.b), opI64GtU, wasmbin.OpcodeI32Or)
	case wasmbin.MiscMemoryInit:
		n, _ := w.bulk.segLen(k.a)
		b = wasmbin.AppendInt64(append(end64(b, hS), wasmbin.OpcodeI64Const), int64(n))
		b = append(b, opI64GtU, wasmbin.OpcodeI32Or)
	}
	b = get(get(get(append(b, wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty), hD), hS), hN)
	b = append(append(b, op...), wasmbin.OpcodeReturn, wasmbin.OpcodeEnd)

	// piece opens the loop, with its check, and sets $k = min($n,
	// bulkChunk).
	piece := func(b []byte) []byte {
		b = w.appendCheck(append(b, wasmbin.OpcodeLoop, wasmbin.BlockTypeEmpty), splitCost, false)
		b = wasmbin.AppendInt64(append(get(b, hN), wasmbin.OpcodeI32Const), bulkChunk)
		b = wasmbin.AppendInt64(append(get(b, hN), wasmbin.OpcodeI32Const), bulkChunk)
		return set(append(b, opI32LtU, wasmbin.OpcodeSelect), hK)
	}
	add := func(b []byte, l uint32, op byte) []byte { // $l = $l op $k
		return set(append(get(get(b, l), hK), op), l)
	}
	next := func(b []byte) []byte { // charge $k, loop while $n
		if w.remap {
			b = append(b, bulkCharge(uint32(w.globals), hK)...)
		}
		return append(get(b, hN), wasmbin.OpcodeBrIf, 0, wasmbin.OpcodeEnd)
	}
	ascending := func(b []byte) []byte {
		b = piece(b)
		b = append(get(get(get(b, hD), hS), hK), op...)
		b = add(b, hD, wasmbin.OpcodeI32Add)
		if k.sub != wasmbin.MiscMemoryFill {
			b = add(b, hS, wasmbin.OpcodeI32Add)
		}
		return next(add(b, hN, wasmbin.OpcodeI32Sub))
	}
	if k.sub == wasmbin.MiscMemoryCopy && k.a == k.b {
		b = append(get(get(b, hD), hS), opI32GtU, wasmbin.OpcodeIf, wasmbin.BlockTypeEmpty)
		b = piece(b)
		b = add(b, hN, wasmbin.OpcodeI32Sub)
		b = append(get(get(b, hD), hN), wasmbin.OpcodeI32Add)
		b = append(get(get(b, hS), hN), wasmbin.OpcodeI32Add)
		b = append(get(b, hK), op...)
		b = append(next(b), wasmbin.OpcodeElse)
		b = append(ascending(b), wasmbin.OpcodeEnd)
	} else {
		b = ascending(b)
	}
	b = append(b, wasmbin.OpcodeEnd)
	return append(wasmbin.AppendUint64(nil, uint64(len(b))), b...)
}
