package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// checkExportNames refuses a module that already exports MemoryName (both
// modes) or, in FlagBudget mode, StackName.
func checkExportNames(exports []export, f Flag) {
	for _, e := range exports {
		if e.name == MemoryName || (f == FlagBudget && e.name == StackName) {
			fail("the module already exports " + e.name)
		}
	}
}

// checkExportedMemories refuses an export of a memory index the module
// does not have: it would export the flag's memory after the rewrite.
func (w *rewriter) checkExportedMemories(exports []export) {
	for _, e := range exports {
		if e.kind == wasmbin.ExternMemory {
			w.memory(e.idx)
		}
	}
}

// checkData refuses an active data segment that names a memory index the
// module does not have: after the rewrite it would initialise the flag.
func (w *rewriter) checkData(body []byte) {
	r := newReader(body)
	for n := r.u32(); n > 0; n-- {
		switch flags := r.u32(); flags {
		case 0: // active, memory 0
			w.memory(0)
			w.constExpr(r)
		case 1: // passive
		case 2: // active, explicit memory
			w.memory(r.u32())
			w.constExpr(r)
		default:
			fail(fmt.Sprintf("unknown data segment flags %d", flags))
		}
		r.bytes(int(r.u32()))
	}
}

// checkFunctionIndices refuses (FlagMemory, which rewrites no function
// index) a function index beyond the module's functions outside the code
// (instrumentCode checks those): it would name a helper after the rewrite
// (bulk.go). The sections are decoded as FlagBudget remaps them.
func (w *rewriter) checkFunctionIndices(m *module) {
	for _, s := range m.secs {
		switch s.id {
		case wasmbin.SectionIDTable, wasmbin.SectionIDGlobal, wasmbin.SectionIDExport, wasmbin.SectionIDStart,
			wasmbin.SectionIDElement:
			w.remapSection(m, s)
		}
	}
}

// constExpr skips a constant expression, through its end.
func (w *rewriter) constExpr(r *reader) {
	for {
		op := r.byte()
		if op == wasmbin.OpcodeEnd {
			return
		}
		w.immediates(r, op)
	}
}

func (w *rewriter) global(idx uint32) {
	if uint64(idx) >= w.globals {
		fail(fmt.Sprintf("global index %d out of range", idx))
	}
}

func (w *rewriter) memory(idx uint32) {
	if uint64(idx) >= w.memories {
		fail(fmt.Sprintf("memory index %d out of range", idx))
	}
}

func (w *rewriter) memArg(r *reader) {
	flags, mem := r.memArg()
	// Flags from bit 7 up are no encoding the rewriter knows; they are
	// only refused when memory indices matter (FlagMemory): FlagBudget
	// copies them as they are, as it always has.
	if flags >= 0x80 && w.memories != noLimit {
		fail(fmt.Sprintf("unknown memarg flags 0x%x", flags))
	}
	w.memory(mem)
}

// immediates skips op's immediates, checking the memory indices among them.
func (w *rewriter) immediates(r *reader, op byte) {
	switch {
	case op == wasmbin.OpcodeUnreachable, op == wasmbin.OpcodeNop, op == wasmbin.OpcodeElse, op == wasmbin.OpcodeThrowRef,
		op == wasmbin.OpcodeEnd, op == wasmbin.OpcodeReturn, op == wasmbin.OpcodeCatchAll, op == wasmbin.OpcodeDrop,
		op == wasmbin.OpcodeSelect:
	case op == wasmbin.OpcodeBlock, op == wasmbin.OpcodeIf, op == wasmbin.OpcodeTry:
		r.blockType()
	case op == wasmbin.OpcodeCatch, op == wasmbin.OpcodeThrow, op == wasmbin.OpcodeRethrow, op == wasmbin.OpcodeBr,
		op == wasmbin.OpcodeBrIf, op == wasmbin.OpcodeCall, op == wasmbin.OpcodeReturnCall, op == wasmbin.OpcodeCallRef,
		op == wasmbin.OpcodeReturnCallRef, op == wasmbin.OpcodeDelegate, op == wasmbin.OpcodeBrOnNull,
		op == wasmbin.OpcodeBrOnNonNull: // tag/label/func/type index
		r.u32()
	case op == wasmbin.OpcodeBrTable:
		for n := r.u32(); n > 0; n-- {
			r.u32()
		}
		r.u32()
	case op == wasmbin.OpcodeCallIndirect, op == wasmbin.OpcodeReturnCallIndirect: // type, table
		r.u32()
		r.u32()
	case op == wasmbin.OpcodeTypedSelect:
		for n := r.u32(); n > 0; n-- {
			r.valType()
		}
	case op == wasmbin.OpcodeTryTable:
		r.blockType()
		for n := r.u32(); n > 0; n-- {
			switch k := r.byte(); k {
			case wasmbin.CatchTag, wasmbin.CatchTagRef:
				r.u32()
				r.u32()
			case wasmbin.CatchAllLabel, wasmbin.CatchAllRefLbl:
				r.u32()
			default:
				fail(fmt.Sprintf("unknown catch kind %d", k))
			}
		}
	case op >= wasmbin.OpcodeLocalGet && op <= wasmbin.OpcodeTableSet: // locals, globals, table.get/set
		r.u32()
	case op >= wasmbin.OpcodeI32Load && op <= wasmbin.OpcodeI64Store32: // loads and stores
		w.memArg(r)
	case op == wasmbin.OpcodeMemorySize, op == wasmbin.OpcodeMemoryGrow:
		w.memory(r.u32())
	case op == wasmbin.OpcodeI32Const, op == wasmbin.OpcodeI64Const:
		r.s64()
	case op == wasmbin.OpcodeF32Const:
		r.bytes(4)
	case op == wasmbin.OpcodeF64Const:
		r.bytes(8)
	case op >= wasmbin.OpcodeI32Eqz && op <= wasmbin.OpcodeI64Extend32S: // numeric, sign extension
	case op == wasmbin.OpcodeRefNull: // ht
		r.s64()
	case op == wasmbin.OpcodeRefIsNull, op == wasmbin.OpcodeRefEq, op == wasmbin.OpcodeRefAsNonNull:
	case op == wasmbin.OpcodeRefFunc:
		r.u32()
	case op == wasmbin.OpcodePrefixMisc:
		w.fc(r, r.u32())
	case op == wasmbin.OpcodePrefixVec:
		w.simd(r, r.u32())
	case op == wasmbin.OpcodePrefixAtomic:
		if sub := r.u32(); sub == wasmbin.AtomicFence {
			r.byte()
		} else {
			w.memArg(r)
		}
	default:
		fail(fmt.Sprintf("unknown opcode 0x%02x", op))
	}
}

func (w *rewriter) fc(r *reader, sub uint32) {
	switch {
	case sub <= wasmbin.MiscI64TruncSatF64U: // saturating truncations
	case sub == wasmbin.MiscMemoryInit: // data mem
		r.u32()
		w.memory(r.u32())
	case sub == wasmbin.MiscDataDrop, sub == wasmbin.MiscElemDrop, sub == wasmbin.MiscTableGrow,
		sub == wasmbin.MiscTableSize, sub == wasmbin.MiscTableFill:
		r.u32()
	case sub == wasmbin.MiscMemoryCopy: // dst src
		w.memory(r.u32())
		w.memory(r.u32())
	case sub == wasmbin.MiscTableInit, sub == wasmbin.MiscTableCopy:
		r.u32()
		r.u32()
	case sub == wasmbin.MiscMemoryFill:
		w.memory(r.u32())
	default:
		fail(fmt.Sprintf("unknown 0xfc opcode %d", sub))
	}
}

func (w *rewriter) simd(r *reader, sub uint32) {
	switch {
	case sub <= wasmbin.VecV128Store, sub == wasmbin.VecV128Load32Zero, sub == wasmbin.VecV128Load64Zero: // loads and stores
		w.memArg(r)
	case sub == wasmbin.VecV128Const, sub == wasmbin.VecI8x16Shuffle:
		r.bytes(16)
	case sub >= wasmbin.VecI8x16ExtractLaneS && sub <= wasmbin.VecF64x2ReplaceLane: // extract/replace lane
		r.byte()
	case sub >= wasmbin.VecV128Load8Lane && sub <= wasmbin.VecV128Store64Lane: // load/store lane
		w.memArg(r)
		r.byte()
	case sub <= wasmbin.VecLast:
	default:
		fail(fmt.Sprintf("unknown SIMD opcode %d", sub))
	}
}
