package wasmbin

// Opcode is an instruction's first byte.
type Opcode = byte

// Control instructions.
const (
	OpcodeUnreachable        Opcode = 0x00
	OpcodeNop                Opcode = 0x01
	OpcodeBlock              Opcode = 0x02
	OpcodeLoop               Opcode = 0x03
	OpcodeIf                 Opcode = 0x04
	OpcodeElse               Opcode = 0x05
	OpcodeTry                Opcode = 0x06 // legacy exception handling
	OpcodeCatch              Opcode = 0x07 // legacy exception handling
	OpcodeThrow              Opcode = 0x08
	OpcodeRethrow            Opcode = 0x09 // legacy exception handling
	OpcodeThrowRef           Opcode = 0x0a
	OpcodeEnd                Opcode = 0x0b
	OpcodeBr                 Opcode = 0x0c
	OpcodeBrIf               Opcode = 0x0d
	OpcodeBrTable            Opcode = 0x0e
	OpcodeReturn             Opcode = 0x0f
	OpcodeCall               Opcode = 0x10
	OpcodeCallIndirect       Opcode = 0x11
	OpcodeReturnCall         Opcode = 0x12 // tail calls
	OpcodeReturnCallIndirect Opcode = 0x13 // tail calls
	OpcodeCallRef            Opcode = 0x14 // typed function references
	OpcodeReturnCallRef      Opcode = 0x15 // typed function references + tail calls
	OpcodeDelegate           Opcode = 0x18 // legacy exception handling
	OpcodeCatchAll           Opcode = 0x19 // legacy exception handling
	OpcodeTryTable           Opcode = 0x1f
)

// Parametric instructions.
const (
	OpcodeDrop        Opcode = 0x1a
	OpcodeSelect      Opcode = 0x1b
	OpcodeTypedSelect Opcode = 0x1c // select t*
)

// Variable and table instructions.
const (
	OpcodeLocalGet  Opcode = 0x20
	OpcodeLocalSet  Opcode = 0x21
	OpcodeLocalTee  Opcode = 0x22
	OpcodeGlobalGet Opcode = 0x23
	OpcodeGlobalSet Opcode = 0x24
	OpcodeTableGet  Opcode = 0x25
	OpcodeTableSet  Opcode = 0x26
)

// Memory instructions: the loads and stores (each with a memarg) are the
// range OpcodeI32Load..OpcodeI64Store32.
const (
	OpcodeI32Load    Opcode = 0x28
	OpcodeI64Load32U Opcode = 0x35 // the last load
	OpcodeI32Store   Opcode = 0x36 // the first store
	OpcodeI64Store32 Opcode = 0x3e
	OpcodeMemorySize Opcode = 0x3f
	OpcodeMemoryGrow Opcode = 0x40
)

// Constants.
const (
	OpcodeI32Const Opcode = 0x41
	OpcodeI64Const Opcode = 0x42
	OpcodeF32Const Opcode = 0x43
	OpcodeF64Const Opcode = 0x44
)

// Numeric instructions without immediates: OpcodeI32Eqz..OpcodeI64Extend32S
// (comparisons, arithmetic, conversions, sign extension). The ones the
// extended constant expressions allow are named, and those the interrupt
// instrumentation emits or weighs: the divisions and remainders are the
// ranges OpcodeI32DivS..OpcodeI32RemU and OpcodeI64DivS..OpcodeI64RemU.
const (
	OpcodeI32Eqz       Opcode = 0x45
	OpcodeI32LtS       Opcode = 0x48
	OpcodeI32Add       Opcode = 0x6a
	OpcodeI32Sub       Opcode = 0x6b
	OpcodeI32Mul       Opcode = 0x6c
	OpcodeI32DivS      Opcode = 0x6d
	OpcodeI32RemU      Opcode = 0x70
	OpcodeI32Or        Opcode = 0x72
	OpcodeI32ShrU      Opcode = 0x76
	OpcodeI64Add       Opcode = 0x7c
	OpcodeI64Sub       Opcode = 0x7d
	OpcodeI64Mul       Opcode = 0x7e
	OpcodeI64DivS      Opcode = 0x7f
	OpcodeI64RemU      Opcode = 0x82
	OpcodeF32Sqrt      Opcode = 0x91
	OpcodeF32Div       Opcode = 0x95
	OpcodeF64Sqrt      Opcode = 0x9f
	OpcodeF64Div       Opcode = 0xa3
	OpcodeI64Extend32S Opcode = 0xc4
)

// Reference instructions.
const (
	OpcodeRefNull      Opcode = 0xd0
	OpcodeRefIsNull    Opcode = 0xd1
	OpcodeRefFunc      Opcode = 0xd2
	OpcodeRefEq        Opcode = 0xd3 // GC; no immediate
	OpcodeRefAsNonNull Opcode = 0xd4 // typed function references
	OpcodeBrOnNull     Opcode = 0xd5 // typed function references
	OpcodeBrOnNonNull  Opcode = 0xd6 // typed function references
)

// Prefixes: the instruction's u32 sub-opcode follows.
const (
	OpcodePrefixGC     Opcode = 0xfb // not decoded: GC is refused
	OpcodePrefixMisc   Opcode = 0xfc
	OpcodePrefixVec    Opcode = 0xfd
	OpcodePrefixAtomic Opcode = 0xfe
)

// 0xfc sub-opcodes.
const (
	MiscI32TruncSatF32S uint32 = 0 // ..7: non-trapping conversions
	MiscI64TruncSatF64U uint32 = 7
	MiscMemoryInit      uint32 = 8
	MiscDataDrop        uint32 = 9
	MiscMemoryCopy      uint32 = 10
	MiscMemoryFill      uint32 = 11
	MiscTableInit       uint32 = 12
	MiscElemDrop        uint32 = 13
	MiscTableCopy       uint32 = 14
	MiscTableGrow       uint32 = 15
	MiscTableSize       uint32 = 16
	MiscTableFill       uint32 = 17
)

// 0xfd sub-opcodes with immediates (the others in the range up to
// VecLast have none, but for the unassigned ones, which are errors).
const (
	VecV128Load          uint32 = 0x00 // ..0x0b: memarg
	VecV128Store         uint32 = 0x0b
	VecV128Const         uint32 = 0x0c // 16 bytes
	VecI8x16Shuffle      uint32 = 0x0d // 16 lane indices
	VecI8x16ExtractLaneS uint32 = 0x15 // ..0x22: a lane index
	VecF64x2ReplaceLane  uint32 = 0x22
	VecV128Load8Lane     uint32 = 0x54 // ..0x5b: memarg and a lane index
	VecV128Load64Lane    uint32 = 0x57 // the last lane load
	VecV128Store8Lane    uint32 = 0x58 // the first lane store
	VecV128Store64Lane   uint32 = 0x5b
	VecV128Load32Zero    uint32 = 0x5c // memarg
	VecV128Load64Zero    uint32 = 0x5d // memarg
	// VecLast is the last relaxed SIMD opcode
	// (i32x4.relaxed_dot_i8x16_i7x16_add_s).
	VecLast uint32 = 0x113
)

// 0xfe sub-opcodes: all but atomic.fence take a memarg; the loads, stores
// and read-modify-writes are AtomicI32Load..AtomicLast.
const (
	AtomicNotify  uint32 = 0x00
	AtomicWait32  uint32 = 0x01
	AtomicWait64  uint32 = 0x02
	AtomicFence   uint32 = 0x03 // one 0x00 byte
	AtomicI32Load uint32 = 0x10
	AtomicLast    uint32 = 0x4e // i64.atomic.rmw32.cmpxchg_u
)
