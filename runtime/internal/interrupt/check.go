package interrupt

import (
	"fmt"
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
		if e.kind == kindMemory {
			w.memory(e.idx)
		}
	}
}

// checkData refuses an active data segment that names a memory index the
// module does not have: after the rewrite it would initialise the flag.
func (w *rewriter) checkData(body []byte) {
	r := &reader{b: body}
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

// constExpr skips a constant expression, through its end.
func (w *rewriter) constExpr(r *reader) {
	for {
		op := r.byte()
		if op == 0x0b {
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
	case op <= 0x01, op == 0x05, op == 0x0a, op == 0x0b, op == 0x0f, op == 0x19, op == 0x1a, op == 0x1b:
		// unreachable nop else throw_ref end return catch_all drop select
	case op == 0x02, op == 0x04, op == 0x06: // block if try
		r.blockType()
	case op == 0x07, op == 0x08, op == 0x09, op == 0x0c, op == 0x0d, op == 0x10, op == 0x12,
		op == 0x14, op == 0x15, op == 0x18, op == 0xd5, op == 0xd6: // tag/label/func/type index
		r.u32()
	case op == 0x0e: // br_table
		for n := r.u32(); n > 0; n-- {
			r.u32()
		}
		r.u32()
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		for n := r.u32(); n > 0; n-- {
			r.valType()
		}
	case op == 0x1f: // try_table
		r.blockType()
		for n := r.u32(); n > 0; n-- {
			switch k := r.byte(); k {
			case 0x00, 0x01:
				r.u32()
				r.u32()
			case 0x02, 0x03:
				r.u32()
			default:
				fail(fmt.Sprintf("unknown catch kind %d", k))
			}
		}
	case op >= 0x20 && op <= 0x26: // locals, globals, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		w.memArg(r)
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		w.memory(r.u32())
	case op == 0x41:
		r.s64()
	case op == 0x42:
		r.s64()
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
	case op == 0xd0: // ref.null ht
		r.s64()
	case op == 0xd1, op == 0xd3, op == 0xd4: // ref.is_null, ref.eq, ref.as_non_null
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0xfc:
		w.fc(r, r.u32())
	case op == 0xfd:
		w.simd(r, r.u32())
	case op == 0xfe:
		sub := r.u32()
		if sub == 0x03 { // atomic.fence
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
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init data mem
		r.u32()
		w.memory(r.u32())
	case sub == 9, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10: // memory.copy dst src
		w.memory(r.u32())
		w.memory(r.u32())
	case sub == 12, sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		w.memory(r.u32())
	default:
		fail(fmt.Sprintf("unknown 0xfc opcode %d", sub))
	}
}

func (w *rewriter) simd(r *reader, sub uint32) {
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		w.memArg(r)
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		w.memArg(r)
		r.byte()
	case sub <= 0x113:
	default:
		fail(fmt.Sprintf("unknown SIMD opcode %d", sub))
	}
}
