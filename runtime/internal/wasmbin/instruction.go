package wasmbin

import "fmt"

// MemArg is a load's or store's memory argument.
type MemArg struct {
	// Align is the alignment exponent (the flags without bit 6).
	Align uint32
	// Memory is the memory index: 0 unless bit 6 of the flags is set
	// (multi-memory), when it follows the flags.
	Memory uint32
	// Offset is the static offset (u64 for memory64).
	Offset uint64
}

// MemArgMemIdx is the memarg flags bit (multi-memory) saying a memory
// index follows the flags.
const MemArgMemIdx = 0x40

// Catch kinds of try_table.
const (
	CatchTag       byte = 0x00 // catch tag label
	CatchTagRef    byte = 0x01 // catch_ref tag label
	CatchAllLabel  byte = 0x02 // catch_all label
	CatchAllRefLbl byte = 0x03 // catch_all_ref label
)

// Catch is one catch clause of a try_table.
type Catch struct {
	Kind  byte
	Tag   uint32 // CatchTag and CatchTagRef
	Label uint32
}

// Instruction is one decoded instruction. Which fields hold its
// immediates depends on the opcode:
//
//	block loop if try               BlockType
//	try_table                       BlockType; Count catch clauses, in Bytes (Catches)
//	br br_if br_on_null
//	br_on_non_null rethrow delegate Index = label depth
//	br_table                        Count targets (Targets), in Bytes; Index = default depth
//	call return_call ref.func       Index = function index
//	call_indirect                   Index = type index, Index2 = table index
//	return_call_indirect            Index = type index, Index2 = table index
//	call_ref return_call_ref        Index = type index
//	throw catch                     Index = tag index
//	select t*                       Count value types, in Bytes
//	local.get/set/tee               Index = local index
//	global.get/set                  Index = global index
//	table.get/set                   Index = table index
//	loads, stores                   MemArg
//	memory.size memory.grow         Index = memory index
//	i32.const i64.const             Value = the constant as int64 bits
//	f32.const f64.const             Value = the bits
//	ref.null                        Heap = the heap type
//	0xfc: memory.init               Index = data index, Index2 = memory index
//	      data.drop                 Index = data index
//	      memory.copy               Index = destination memory, Index2 = source memory
//	      memory.fill               Index = memory index
//	      table.init                Index = element index, Index2 = table index
//	      elem.drop                 Index = element index
//	      table.copy                Index = destination table, Index2 = source table
//	      table.grow/size/fill      Index = table index
//	0xfd: loads, stores             MemArg (and Lane for the lane loads and stores)
//	      v128.const i8x16.shuffle  Bytes = the 16 bytes
//	      extract/replace lane      Lane
//	0xfe: atomics                   MemArg (atomic.fence: none)
//
// Offset and End delimit the instruction's bytes in the module: an
// instrumenter copies [Offset, End) or rewrites it.
type Instruction struct {
	Opcode Opcode
	// Sub is the sub-opcode after a prefix (0xfc, 0xfd, 0xfe).
	Sub         uint32
	Offset, End int

	BlockType     BlockType
	Index, Index2 uint32
	MemArg        MemArg
	Lane          byte
	Value         uint64
	Heap          int64
	Count         uint32
	// Bytes are raw immediates (see above), aliasing the module.
	Bytes []byte
}

// Targets calls yield with each br_table target's label depth, in order,
// without the default (Index), stopping early if yield returns false.
func (in *Instruction) Targets(yield func(uint32) bool) {
	if in.Opcode != OpcodeBrTable {
		return
	}
	b := in.Bytes
	for n := in.Count; n > 0; n-- {
		v, k, _ := DecodeUint32(b) // validated by the Walker
		b = b[k:]
		if !yield(v) {
			return
		}
	}
}

// Catches calls yield with each catch clause of a try_table, in order.
func (in *Instruction) Catches(yield func(Catch) bool) {
	if in.Opcode != OpcodeTryTable {
		return
	}
	r := NewReader(in.Bytes, 0)
	for n := in.Count; n > 0; n-- {
		var c Catch
		c.Kind, _ = r.Byte()
		if c.Kind == CatchTag || c.Kind == CatchTagRef {
			c.Tag, _ = r.U32()
		}
		c.Label, _ = r.U32()
		if !yield(c) {
			return
		}
	}
}

// OpensBlock reports whether the instruction opens a control structure
// (block, loop, if, try, try_table) that an end (or, for try, a delegate)
// closes.
func (in *Instruction) OpensBlock() bool {
	switch in.Opcode {
	case OpcodeBlock, OpcodeLoop, OpcodeIf, OpcodeTry, OpcodeTryTable:
		return true
	}
	return false
}

// Walker decodes the instructions of a function body (after its locals)
// or of a constant expression, one at a time, tracking the control
// nesting so it knows the end that ends the body.
type Walker struct {
	r     Reader
	depth int
	ended bool
	// MaxBrTableTargets, when not 0, makes Next return a
	// *BrTableTooLarge, before it decodes the targets, for a br_table
	// with more targets (the default included).
	MaxBrTableTargets uint32
}

// BrTableTooLarge is the error of a br_table with more targets than
// Walker.MaxBrTableTargets.
type BrTableTooLarge struct {
	Offset  int    // the br_table's
	Targets uint64 // the default included
}

func (e *BrTableTooLarge) Error() string {
	return fmt.Sprintf("br_table at offset 0x%x has %d targets", e.Offset, e.Targets)
}

// NewWalker walks expr, whose first byte is at offset in the module.
func NewWalker(expr []byte, offset int) Walker {
	return Walker{r: NewReader(expr, offset), depth: 1}
}

// Depth is the number of control structures open after the last
// instruction read, the body's own included: 1 at the start, 0 after the
// final end.
func (w *Walker) Depth() int { return w.depth }

// Offset is the offset of the next instruction.
func (w *Walker) Offset() int { return w.r.Offset() }

// Next decodes the next instruction into in. It returns false, with no
// error, after the end that closes the body; it is an error for the bytes
// to end before that end, or to go on after it.
func (w *Walker) Next(in *Instruction) (bool, error) {
	if w.ended {
		if !w.r.Done() {
			return false, w.r.Errorf("%d bytes after the end of the expression", w.r.Len())
		}
		return false, nil
	}
	r := &w.r
	off := r.Offset()
	if r.Done() {
		return false, r.Errorf("expression has no end")
	}
	op := r.buf[r.pos]
	r.pos++
	// Reset field by field: a struct assignment would clear the Bytes
	// pointer through a write barrier, the costliest line of the walk.
	in.Opcode, in.Sub, in.Offset = op, 0, off
	in.BlockType = BlockType{}
	in.Index, in.Index2 = 0, 0
	in.MemArg = MemArg{}
	in.Lane, in.Value, in.Heap, in.Count = 0, 0, 0, 0
	if in.Bytes != nil {
		in.Bytes = nil
	}
	var err error
	switch {
	case op >= OpcodeI32Eqz && op <= OpcodeI64Extend32S:
		// Numeric: no immediates (the bulk of any body).
	case op >= OpcodeLocalGet && op <= OpcodeTableSet:
		// The one-byte cases of the hottest immediates are inlined here
		// by hand (Reader's methods cost too much to inline).
		if p := r.pos; p < len(r.buf) && r.buf[p] < 0x80 {
			in.Index, r.pos = uint32(r.buf[p]), p+1
		} else {
			in.Index, err = r.u32Slow()
		}
	case op >= OpcodeI32Load && op <= OpcodeI64Store32:
		if p := r.pos; p+1 < len(r.buf) && r.buf[p] < MemArgMemIdx && r.buf[p+1] < 0x80 {
			in.MemArg.Align, in.MemArg.Offset, r.pos = uint32(r.buf[p]), uint64(r.buf[p+1]), p+2
		} else {
			in.MemArg, err = r.readMemArg()
		}
	case op == OpcodeI32Const:
		if p := r.pos; p < len(r.buf) && r.buf[p] < 0x80 {
			in.Value, r.pos = uint64(int64(int8(r.buf[p]<<1)>>1)), p+1
		} else {
			var v int32
			v, err = r.s32Slow()
			in.Value = uint64(int64(v))
		}
	case op == OpcodeI64Const:
		var v int64
		v, err = r.S64()
		in.Value = uint64(v)
	case op == OpcodeF32Const:
		var b []byte
		b, err = r.Bytes(4)
		if err == nil {
			in.Value = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
		}
	case op == OpcodeF64Const:
		var b []byte
		b, err = r.Bytes(8)
		if err == nil {
			for i := 7; i >= 0; i-- {
				in.Value = in.Value<<8 | uint64(b[i])
			}
		}
	default:
		err = w.control(in, op)
	}
	if err != nil {
		return false, err
	}
	in.End = r.Offset()
	return true, nil
}

// control decodes the instructions outside the dense ranges Next handles.
func (w *Walker) control(in *Instruction, op Opcode) (err error) {
	r := &w.r
	switch op {
	case OpcodeUnreachable, OpcodeNop, OpcodeReturn, OpcodeDrop, OpcodeSelect,
		OpcodeThrowRef, OpcodeRefIsNull, OpcodeRefEq, OpcodeRefAsNonNull:
	case OpcodeElse, OpcodeCatchAll:
		// Between two parts of one structure: the depth is unchanged.
	case OpcodeBlock, OpcodeLoop, OpcodeIf, OpcodeTry:
		in.BlockType, err = r.ReadBlockType()
		w.depth++
	case OpcodeTryTable:
		if in.BlockType, err = r.ReadBlockType(); err != nil {
			return err
		}
		if in.Count, err = r.VecCount(2); err != nil {
			return err
		}
		start := r.pos
		for n := in.Count; n > 0; n-- {
			off := r.Offset()
			k, err := r.Byte()
			if err != nil {
				return err
			}
			switch k {
			case CatchTag, CatchTagRef:
				if _, err := r.U32(); err != nil {
					return err
				}
			case CatchAllLabel, CatchAllRefLbl:
			default:
				return Errorf(off, "unknown catch kind 0x%02x", k)
			}
			if _, err := r.U32(); err != nil {
				return err
			}
		}
		in.Bytes = r.buf[start:r.pos]
		w.depth++
	case OpcodeEnd:
		w.depth--
		if w.depth == 0 {
			w.ended = true
		}
	case OpcodeDelegate:
		// Ends a try, like end, branching to a label.
		in.Index, err = r.U32()
		w.depth--
		if w.depth <= 0 {
			return Errorf(in.Offset, "delegate outside a try")
		}
	case OpcodeBr, OpcodeBrIf, OpcodeBrOnNull, OpcodeBrOnNonNull, OpcodeRethrow,
		OpcodeCall, OpcodeReturnCall, OpcodeRefFunc, OpcodeCallRef, OpcodeReturnCallRef,
		OpcodeThrow, OpcodeCatch:
		in.Index, err = r.U32()
	case OpcodeBrTable:
		if in.Count, err = r.VecCount(1); err != nil {
			return err
		}
		if w.MaxBrTableTargets != 0 && uint64(in.Count)+1 > uint64(w.MaxBrTableTargets) {
			return &BrTableTooLarge{Offset: in.Offset, Targets: uint64(in.Count) + 1}
		}
		start := r.pos
		for n := in.Count; n > 0; n-- {
			if _, err := r.U32(); err != nil {
				return err
			}
		}
		in.Bytes = r.buf[start:r.pos]
		in.Index, err = r.U32()
	case OpcodeCallIndirect, OpcodeReturnCallIndirect:
		if in.Index, err = r.U32(); err != nil {
			return err
		}
		in.Index2, err = r.U32()
	case OpcodeTypedSelect:
		if in.Count, err = r.VecCount(1); err != nil {
			return err
		}
		start := r.pos
		for n := in.Count; n > 0; n-- {
			if _, _, err := r.ReadValueType(); err != nil {
				return err
			}
		}
		in.Bytes = r.buf[start:r.pos]
	case OpcodeMemorySize, OpcodeMemoryGrow:
		in.Index, err = r.U32()
	case OpcodeRefNull:
		in.Heap, err = r.ReadHeapType()
	case OpcodePrefixMisc:
		if in.Sub, err = r.U32(); err != nil {
			return err
		}
		err = w.misc(in)
	case OpcodePrefixVec:
		if in.Sub, err = r.U32(); err != nil {
			return err
		}
		err = w.vec(in)
	case OpcodePrefixAtomic:
		if in.Sub, err = r.U32(); err != nil {
			return err
		}
		err = w.atomic(in)
	default:
		return Errorf(in.Offset, "unknown opcode 0x%02x", op)
	}
	return err
}

func (w *Walker) misc(in *Instruction) (err error) {
	r := &w.r
	switch in.Sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // non-trapping conversions
	case MiscMemoryInit, MiscTableInit, MiscMemoryCopy, MiscTableCopy:
		if in.Index, err = r.U32(); err != nil {
			return err
		}
		in.Index2, err = r.U32()
	case MiscDataDrop, MiscMemoryFill, MiscElemDrop, MiscTableGrow, MiscTableSize, MiscTableFill:
		in.Index, err = r.U32()
	default:
		return Errorf(in.Offset, "unknown opcode 0xfc %d", in.Sub)
	}
	return err
}

// vecUnassigned marks the SIMD opcodes below 0x100 that no proposal
// assigns.
var vecUnassigned = func() (u [256]bool) {
	for _, op := range []uint32{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee} {
		u[op] = true
	}
	return u
}()

func (w *Walker) vec(in *Instruction) (err error) {
	r := &w.r
	sub := in.Sub
	switch {
	case sub <= VecV128Store, sub == VecV128Load32Zero, sub == VecV128Load64Zero:
		in.MemArg, err = r.readMemArg()
	case sub == VecV128Const, sub == VecI8x16Shuffle:
		in.Bytes, err = r.Bytes(16)
	case sub >= VecI8x16ExtractLaneS && sub <= VecF64x2ReplaceLane:
		in.Lane, err = r.Byte()
	case sub >= VecV128Load8Lane && sub <= VecV128Store64Lane:
		if in.MemArg, err = r.readMemArg(); err != nil {
			return err
		}
		in.Lane, err = r.Byte()
	case sub < 0x100 && vecUnassigned[sub], sub > VecLast:
		return Errorf(in.Offset, "unknown opcode 0xfd %d", sub)
	}
	return err
}

func (w *Walker) atomic(in *Instruction) (err error) {
	r := &w.r
	switch sub := in.Sub; {
	case sub == AtomicFence:
		off := r.Offset()
		var z byte
		if z, err = r.Byte(); err == nil && z != 0 {
			return Errorf(off, "atomic.fence with a non-zero immediate")
		}
	case sub <= AtomicWait64, sub >= AtomicI32Load && sub <= AtomicLast:
		in.MemArg, err = r.readMemArg()
	default:
		return Errorf(in.Offset, "unknown opcode 0xfe %d", sub)
	}
	return err
}

// readMemArg reads a memarg: flags (alignment, and bit 6: a memory index
// follows), the memory index, the offset.
func (r *Reader) readMemArg() (MemArg, error) {
	off := r.Offset()
	flags, err := r.U32()
	if err != nil {
		return MemArg{}, err
	}
	var m MemArg
	if flags&MemArgMemIdx != 0 {
		if m.Memory, err = r.U32(); err != nil {
			return MemArg{}, err
		}
	}
	m.Align = flags &^ MemArgMemIdx
	if m.Align >= MemArgMemIdx {
		return MemArg{}, Errorf(off, "memarg flags 0x%x", flags)
	}
	m.Offset, err = r.U64()
	return m, err
}
