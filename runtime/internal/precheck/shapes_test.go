package precheck

// Shapes of function bodies that sit at the limits, for the worst-case
// measurements (worstcase_test.go) and the limit tests.

// filler is 8 bytes of straight-line code that changes local 0:
// local.get 0; i32.const 1; i32.add; local.set 0.
var filler = cat(opLocalGet(0), opI32Const(1), opI32Add, opLocalSet(0))

// fill pads expr with filler (and nops) to size bytes.
func fill(expr []byte, size int) []byte {
	for len(expr)+len(filler) <= size {
		expr = append(expr, filler...)
	}
	for len(expr) < size {
		expr = append(expr, 0x01) // nop
	}
	return expr
}

// finish closes a function of type (func (param i32) (result i32)).
func finish(expr []byte) []byte { return cat(expr, opLocalGet(0), opEnd) }

// shapeNested: depth nested structures open (loops if loop, else
// blocks), each with a conditional branch to itself (a back edge for a
// loop) and filler, the body padded to size bytes.
func shapeNested(depth, size int, loop bool) []byte {
	open := opBlock
	if loop {
		open = opLoop
	}
	// Per level: open, local.get 0, br_if 0, and when it fits some filler.
	level := cat(open, opLocalGet(0), opBrIf(0))
	overhead := 3 + len(opLocalGet(0))
	var e []byte
	per := (size - overhead - depth*(len(level)+1)) / max(depth, 1)
	for d := 0; d < depth; d++ {
		e = append(e, level...)
		e = fill(e, len(e)+max(per, 0))
	}
	for d := 0; d < depth; d++ {
		e = append(e, opEnd...)
	}
	return body(nil, finish(fill(e, size-overhead)))
}

// shapeBrTable: depth nested blocks; inside, as many br_tables of
// targets targets (cycling through every enclosing block) as fit in
// size, each in a block of its own so none is unreachable.
func shapeBrTable(depth, targets, size int) []byte {
	var e []byte
	for d := 0; d < depth; d++ {
		e = append(e, opBlock...)
	}
	var bt []byte
	bt = append(bt, opBlock...)
	bt = append(bt, opLocalGet(0)...)
	bt = append(bt, 0x0e)
	bt = append(bt, leb(uint64(targets-1))...)
	for i := 0; i < targets; i++ { // targets-1 and the default
		bt = append(bt, leb(uint64(i%(depth+1)))...)
	}
	bt = append(bt, opEnd...)
	overhead := depth + 4
	for len(e)+len(bt)+overhead <= size {
		e = append(e, bt...)
	}
	for d := 0; d < depth; d++ {
		e = append(e, opEnd...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeLoops: loops loops in sequence, each counting local 0 down, with
// filler, the body padded to size.
func shapeLoops(loops, size int) []byte {
	l := cat(opLoop, filler, opLocalGet(0), opBrIf(0), opEnd)
	var e []byte
	per := (size - 8) / max(loops, 1)
	for i := 0; i < loops; i++ {
		e = append(e, l...)
		e = fill(e, len(e)+max(per-len(l), 0))
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeLocals: locals i32 locals (the parameter included), a body of
// loops each of which reads and writes every local it can, padded to
// size.
func shapeLocals(locals, loops, size int) []byte {
	var e []byte
	per := (size - 16) / max(loops, 1)
	n := uint32(locals)
	i := uint32(0)
	for l := 0; l < loops; l++ {
		start := len(e)
		e = append(e, opLoop...)
		for len(e)-start+24 < per {
			e = append(e, cat(opLocalGet(i%n), opLocalGet((i+1)%n), opI32Add, opLocalSet((i+2)%n))...)
			i++
		}
		e = append(e, cat(opLocalGet(0), opBrIf(0), opEnd)...)
	}
	groups := [][2]uint64{}
	if locals > 1 {
		groups = append(groups, [2]uint64{uint64(locals - 1), 0x7f})
	}
	// The body's own bytes: groups take ~5 bytes.
	return body(groups, finish(fill(e, size-16)))
}

// shapeStraight: straight-line code only.
func shapeStraight(size int) []byte { return body(nil, finish(fill(nil, size-4))) }

// shapeLocalsNested: locals locals and depth nested loops, each level
// touching every local it can.
func shapeLocalsNested(locals, depth, size int) []byte {
	n := uint32(locals)
	per := (size - 16 - depth*8) / max(depth, 1)
	var e []byte
	i := uint32(0)
	for d := 0; d < depth; d++ {
		start := len(e)
		e = append(e, cat(opLoop, opLocalGet(0), opBrIf(0))...)
		for len(e)-start+12 < per {
			e = append(e, cat(opLocalGet(i%n), opLocalGet((i+1)%n), opI32Add, opLocalSet((i+2)%n))...)
			i++
		}
	}
	for d := 0; d < depth; d++ {
		e = append(e, opEnd...)
	}
	groups := [][2]uint64{}
	if locals > 1 {
		groups = append(groups, [2]uint64{uint64(locals - 1), 0x7f})
	}
	return body(groups, finish(fill(e, size-16)))
}

// shapeBrIf: depth nested blocks; inside, conditional branches, each to
// one of the enclosing blocks (cycling), padded to size.
func shapeBrIf(depth, size int) []byte {
	var e []byte
	for d := 0; d < depth; d++ {
		e = append(e, opBlock...)
	}
	i := 0
	for len(e)+depth+16 < size {
		e = append(e, cat(opLocalGet(0), opBrIf(uint32(i%depth)))...)
		i++
	}
	for d := 0; d < depth; d++ {
		e = append(e, opEnd...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeBrIfDef is shapeBrIf with local 0 redefined before each branch:
// wazero's variable lookup then stops in the current block.
func shapeBrIfDef(depth, size int) []byte {
	var e []byte
	for d := 0; d < depth; d++ {
		e = append(e, opBlock...)
	}
	i := 0
	for len(e)+depth+20 < size {
		e = append(e, cat(opLocalGet(0), opLocalSet(0), opLocalGet(0), opBrIf(uint32(i%depth)))...)
		i++
	}
	for d := 0; d < depth; d++ {
		e = append(e, opEnd...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeBlockChain: empty blocks in sequence, each followed by a read of
// local 0 (never redefined), padded to size.
func shapeBlockChain(size int) []byte {
	var e []byte
	for len(e)+16 < size {
		e = append(e, cat(opBlock, opEnd, opLocalGet(0), []byte{0x1a})...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeCalls: straight-line calls of function 0 (local.get 0; call 0;
// local.set 0), padded to size.
func shapeCalls(size int) []byte {
	c := cat(opLocalGet(0), []byte{0x10, 0x00}, opLocalSet(0))
	var e []byte
	for len(e)+len(c)+8 < size {
		e = append(e, c...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeMemory: straight-line loads and stores (local.get 0; local.get 0;
// i32.load; i32.store), padded to size.
func shapeMemory(size int) []byte {
	c := cat(opLocalGet(0), opLocalGet(0), []byte{0x28, 0x02, 0x00}, []byte{0x36, 0x02, 0x00})
	var e []byte
	for len(e)+len(c)+8 < size {
		e = append(e, c...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeBulk: straight-line memory.fill of length 0 (i32.const 0 ×3;
// memory.fill), the instruction FlagBudget instrumentation grows most
// (it charges each its length), padded to size.
func shapeBulk(size int) []byte {
	c := cat(opI32Const(0), opI32Const(0), opI32Const(0), []byte{0xfc, 0x0b, 0x00})
	var e []byte
	for len(e)+len(c)+8 < size {
		e = append(e, c...)
	}
	return body(nil, finish(fill(e, size-4)))
}

// shapeTinyLoops: a small function of n empty loops, each of which the
// instrumentation gives a check (and the function one at its entry).
func shapeTinyLoops(n int) []byte { return ret0(repeat(cat(opLoop, opEnd), n)) }

// shapeDivs: n signed divisions (i32.const 0 ×2; i32.div_s; drop), each
// with the trap checks wazero gives it.
func shapeDivs(n int) []byte {
	return ret0(repeat(cat(opI32Const(0), opI32Const(0), []byte{0x6d, 0x1a}), n))
}

// shapeLoadChain: loads each from the address the previous one read
// (local.get 0; i32.load ×24; drop, and with calls a call of function 0
// on the last instead of the drop), which wazero cannot prove in bounds
// and compiles each into a check and an exit of its own, padded to size.
func shapeLoadChain(size int, calls bool) []byte {
	end := []byte{0x1a}
	if calls {
		end = []byte{0x10, 0x00, 0x1a}
	}
	c := cat(opLocalGet(0), repeat([]byte{0x28, 0x02, 0x00}, 24), end)
	var e []byte
	for len(e)+len(c)+8 < size {
		e = append(e, c...)
	}
	return body(nil, finish(fill(e, size-4)))
}
