package interrupt

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
	case op >= 0x28 && op <= 0x35: // loads
		return costLoad
	case op >= 0x36 && op <= 0x3e: // stores
		return costStore
	case op == 0x40: // memory.grow
		return costGrow
	case op >= 0x6d && op <= 0x70, op >= 0x7f && op <= 0x82: // integer div, rem
		return costDivision
	case op == 0x91, op == 0x95, op == 0x9f, op == 0xa3: // f32.sqrt f32.div f64.sqrt f64.div
		return costFloatDiv
	case op == 0xfc:
		switch {
		case bulk(sub):
			return costBulk
		case sub == 15: // table.grow
			return costGrow
		}
	case op == 0xfd:
		switch {
		case sub == 11, sub >= 88 && sub <= 91: // v128.store, v128.storeN_lane
			return costStore
		case sub <= 10, sub >= 84 && sub <= 87, sub == 92, sub == 93: // loads
			return costLoad
		}
	case op == 0xfe: // atomics: loads, read-modify-writes, stores, notify, fence
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
	case 0x01, 0x02, 0x03, 0x05, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x18, 0x1a, 0x1f, 0x20, 0x21, 0x22, 0x24:
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
