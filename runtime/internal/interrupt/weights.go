package interrupt

import "github.com/wasmprov/wasmprov/runtime/internal/wasmbin"

// The weights of the instructions that cost more than a unit (weight).
const (
	costCall         = 8
	costCallIndirect = 16
	costLoad         = 16
	costStore        = 4
	costDivision     = 32
	costFloatDiv     = 8
	costBrTable      = 8
	costGrow         = 64
	costBulk         = 16
)

// weight is the cost of instruction op (0xfc, 0xfd or 0xfe: sub) other than
// the control instructions the pass handles itself.
func weight(op byte, sub uint32) int32 {
	switch {
	case op >= wasmbin.OpcodeI32Load && op <= wasmbin.OpcodeI64Load32U: // loads
		return costLoad
	case op >= wasmbin.OpcodeI32Store && op <= wasmbin.OpcodeI64Store32: // stores
		return costStore
	case op == wasmbin.OpcodeMemoryGrow:
		return costGrow
	case op >= wasmbin.OpcodeI32DivS && op <= wasmbin.OpcodeI32RemU, op >= wasmbin.OpcodeI64DivS && op <= wasmbin.OpcodeI64RemU:
		return costDivision
	case op == wasmbin.OpcodeF32Sqrt, op == wasmbin.OpcodeF32Div, op == wasmbin.OpcodeF64Sqrt, op == wasmbin.OpcodeF64Div:
		return costFloatDiv
	case op == wasmbin.OpcodePrefixMisc:
		switch {
		case bulk(sub):
			return costBulk
		case sub == wasmbin.MiscTableGrow:
			return costGrow
		}
	case op == wasmbin.OpcodePrefixVec:
		switch {
		case sub == wasmbin.VecV128Store, sub >= wasmbin.VecV128Store8Lane && sub <= wasmbin.VecV128Store64Lane:
			return costStore
		case sub < wasmbin.VecV128Store, sub >= wasmbin.VecV128Load8Lane && sub <= wasmbin.VecV128Load64Lane,
			sub == wasmbin.VecV128Load32Zero, sub == wasmbin.VecV128Load64Zero: // loads
			return costLoad
		}
	case op == wasmbin.OpcodePrefixAtomic: // loads, read-modify-writes, stores, notify, fence
		return costLoad
	}
	return 1
}

// values is the virtual registers instruction op defines, for the stack
// estimate: none for the structure, branches, local.get (its value is the
// local's), local.set, local.tee, global.set, drop and nop; one for any
// other (a call's results, and more, are counted by callSig).
func values(op byte) uint64 {
	switch op {
	case wasmbin.OpcodeNop, wasmbin.OpcodeBlock, wasmbin.OpcodeLoop, wasmbin.OpcodeElse, wasmbin.OpcodeEnd,
		wasmbin.OpcodeBr, wasmbin.OpcodeBrIf, wasmbin.OpcodeBrTable, wasmbin.OpcodeReturn, wasmbin.OpcodeDelegate,
		wasmbin.OpcodeDrop, wasmbin.OpcodeTryTable, wasmbin.OpcodeLocalGet, wasmbin.OpcodeLocalSet,
		wasmbin.OpcodeLocalTee, wasmbin.OpcodeGlobalSet:
		return 0
	}
	return 1
}

// charge is what a check at c charges: c, or maxRegion for an unknown c.
func charge(c int32) uint32 {
	if c > maxRegion {
		return maxRegion
	}
	return uint32(max32(c, 1))
}
