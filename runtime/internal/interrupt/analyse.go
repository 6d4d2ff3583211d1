package interrupt

import (
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// analyse runs the pass, lazily or not; a lazy pass gives up (false) once
// it inserts more than maxLazyChecks checks on entry paths.
func (p *placer) analyse(code []byte, lazy bool) bool {
	p.begin(lazy)
	r := newReader(code)
	for {
		if lazy && p.induced > maxLazyChecks {
			return false
		}
		if r.done() {
			fail("function body without end")
		}
		pos := r.pos()
		op := r.byte()
		p.n += values(op)
		if p.instr(r, code, pos, op) { // the function's final end
			return !(lazy && p.induced > maxLazyChecks)
		}
	}
}

// begin resets the placer for a function's pass, lazy or not, and places
// what comes before its first instruction.
func (p *placer) begin(lazy bool) {
	p.edits, p.frames = p.edits[:0], append(p.frames[:0], frame{kind: frameFunc, br: dead})
	p.lazy, p.induced, p.labels = lazy, 0, 0
	p.wrap, p.routed, p.wrapped, p.exitC, p.exitEntry = p.bt != nil, false, false, dead, false
	p.n, p.merges, p.args, p.hasCall, p.handlers, p.v128 = 0, 0, 0, false, false, p.fnV128
	p.exitAllC, p.exitAllEntry, p.returned, p.counted, p.frame, p.saved = dead, false, false, false, 0, -1
	if p.depth {
		p.edits = append(p.edits, edit{kind: editStackEnter})
	}
	if p.wrap {
		p.edits = append(p.edits, edit{kind: editWrapOpen})
	}
	p.c, p.entry = callSlack+costCall, lazy
	if !lazy {
		p.check(0, reasonEntry)
	}
}

// instr handles the instruction op at pos, reading its immediates from r
// (over code); true at the function's final end. The structured control
// instructions are in control.go.
func (p *placer) instr(r *reader, code []byte, pos int, op byte) bool {
	switch op {
	case wasmbin.OpcodeBlock, wasmbin.OpcodeTry:
		p.openBlock(r, pos, op)
	case wasmbin.OpcodeTryTable: // try_table bt catch*
		p.openTryTable(r, pos)
	case wasmbin.OpcodeLoop: // loop bt
		p.openLoop(r, pos)
	case wasmbin.OpcodeIf: // if bt
		p.openIf(r, pos)
	case wasmbin.OpcodeElse:
		p.elseInstr(pos)
	case wasmbin.OpcodeCatch, wasmbin.OpcodeCatchAll: // catch tag, catch_all (legacy)
		p.catch(r, pos, op)
	case wasmbin.OpcodeDelegate: // delegate l (legacy): ends a try
		p.delegate(r, pos)
	case wasmbin.OpcodeEnd:
		return p.end(r, pos)
	case wasmbin.OpcodeBr, wasmbin.OpcodeBrIf, wasmbin.OpcodeBrTable, wasmbin.OpcodeBrOnNull, wasmbin.OpcodeBrOnNonNull:
		p.branchOp(r, pos, op)
	case wasmbin.OpcodeReturn:
		p.ret(pos, 1)
	case wasmbin.OpcodeUnreachable, wasmbin.OpcodeThrow, wasmbin.OpcodeRethrow, wasmbin.OpcodeThrowRef: // throw tag, rethrow l
		p.need(pos, 1)
		if op == wasmbin.OpcodeThrow || op == wasmbin.OpcodeRethrow {
			r.u32()
		}
		p.c, p.entry = dead, false
	case wasmbin.OpcodeCall, wasmbin.OpcodeReturnCall,
		wasmbin.OpcodeCallIndirect, wasmbin.OpcodeReturnCallIndirect,
		wasmbin.OpcodeCallRef, wasmbin.OpcodeReturnCallRef:
		p.callOp(r, pos, op)
	case wasmbin.OpcodeRefFunc: // ref.func f
		p.need(pos, 1)
		start := r.pos()
		f := r.u32()
		if nf := p.w.fn(f); nf != f {
			p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos() - start), kind: editFunc, w: nf})
		}
		p.add(1)
	case wasmbin.OpcodeGlobalGet, wasmbin.OpcodeGlobalSet:
		p.need(pos, 1)
		p.w.global(r.u32())
		p.add(1)
	case wasmbin.OpcodePrefixMisc, wasmbin.OpcodePrefixVec, wasmbin.OpcodePrefixAtomic:
		p.prefixed(r, code, pos, op)
	default:
		if op == wasmbin.OpcodeLocalSet || op == wasmbin.OpcodeLocalTee {
			p.frames[len(p.frames)-1].sets++
		}
		cost := weight(op, 0)
		p.need(pos, cost)
		p.w.immediates(r, op)
		p.add(cost)
	}
	return false
}

// branchOp handles the branch instruction op at pos and its labels.
func (p *placer) branchOp(r *reader, pos int, op byte) {
	switch op {
	case wasmbin.OpcodeBr, wasmbin.OpcodeBrIf: // br l, br_if l
		l := r.u32()
		p.targets = append(p.targets[:0], l)
		p.branchInstr(pos, 1, op == wasmbin.OpcodeBr)
	case wasmbin.OpcodeBrTable: // br_table l* l
		p.targets = p.targets[:0]
		for n := r.u32(); n > 0; n-- {
			p.targets = append(p.targets, r.u32())
		}
		p.targets = append(p.targets, r.u32())
		p.branchInstr(pos, costBrTable, true)
	default: // br_on_null l, br_on_non_null l
		l := r.u32()
		p.targets = append(p.targets[:0], l)
		p.branchInstr(pos, 1, false)
	}
}

// callOp handles the call instruction op at pos: call f, return_call f,
// call_indirect t table, return_call_indirect, call_ref t, return_call_ref t.
func (p *placer) callOp(r *reader, pos int, op byte) {
	switch op {
	case wasmbin.OpcodeCall, wasmbin.OpcodeReturnCall:
		p.call(pos, costCall)
		start := r.pos()
		f := r.u32()
		nf := p.w.fn(f)
		// callSig's edits are at pos, before the index's.
		how := p.callSig(pos, op == wasmbin.OpcodeReturnCall, wasmbin.OpcodeCall, p.funcSig(f))
		if nf != f {
			p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos() - start), kind: editFunc, w: nf})
		}
		p.afterCall(how, r.pos())
	case wasmbin.OpcodeCallIndirect, wasmbin.OpcodeReturnCallIndirect:
		p.call(pos, costCallIndirect)
		t := r.u32()
		r.u32()
		p.afterCall(p.callSig(pos, op == wasmbin.OpcodeReturnCallIndirect, wasmbin.OpcodeCallIndirect, p.typeSig(t)), r.pos())
	default:
		p.call(pos, costCallIndirect)
		t := r.u32()
		p.afterCall(p.callSig(pos, op == wasmbin.OpcodeReturnCallRef, wasmbin.OpcodeCallRef, p.typeSig(t)), r.pos())
	}
}

// prefixed handles the prefixed (misc, vector, atomic) instruction op at
// pos; a bulk one is followed by a check.
func (p *placer) prefixed(r *reader, code []byte, pos int, op byte) {
	w := p.w
	sub := r.u32()
	p.v128 = p.v128 || op == wasmbin.OpcodePrefixVec
	cost := weight(op, sub)
	imm := r.pos()
	switch op {
	case wasmbin.OpcodePrefixMisc:
		w.fc(r, sub)
	case wasmbin.OpcodePrefixVec:
		w.simd(r, sub)
	default:
		switch sub {
		case wasmbin.AtomicWait32, wasmbin.AtomicWait64:
			// memory.atomic.wait32/64 blocks (on a shared
			// memory) for as long as the guest asks, where no
			// check runs.
			fail("memory.atomic.wait cannot be interrupted")
		case wasmbin.AtomicFence:
			r.byte()
		default:
			w.memArg(r)
		}
	}
	if op == wasmbin.OpcodePrefixMisc && bulk(sub) && p.c >= 0 {
		p.bulkInstr(pos, r.pos(), sub, cost, code[imm:r.pos()])
		return
	}
	p.need(pos, cost)
	p.add(cost)
}

// bulkInstr handles the live bulk instruction sub at pos (up to end, of
// immediates imm) of weight cost: it is split in pieces or followed by a
// check.
func (p *placer) bulkInstr(pos, end int, sub uint32, cost int32, imm []byte) {
	w := p.w
	if h, ok := w.split(sub, imm); ok {
		// In pieces (bulk.go): the inline test in place
		// of the instruction, then a check.
		cost += splitCost
		p.need(pos, cost)
		w.usedBulk = true
		p.edits = append(p.edits, edit{pos: int32(pos), skip: int32(end - pos), kind: editSplit, w: h, ord: p.labels})
		p.add(cost)
		p.edits = append(p.edits, edit{pos: int32(end), kind: editCheck, w: charge(p.c), ord: p.labels, first: p.entry})
		p.stats[reasonBulk]++
		if p.entry {
			p.induced++
		}
		p.c, p.entry = 0, false
		return
	}
	p.need(pos, cost)
	if w.remap {
		w.usedBulk = true
		p.edits = append(p.edits, edit{pos: int32(pos), kind: editTee, ord: p.labels})
	}
	p.add(cost)
	p.edits = append(p.edits, edit{pos: int32(end), kind: editBulk, w: charge(p.c), ord: p.labels, first: p.entry})
	p.stats[reasonBulk]++
	if p.entry {
		p.induced++
	}
	p.c, p.entry = 0, false
}

// branchInstr handles a branch instruction of weight w at pos to
// p.targets; uncond: nothing runs after it.
func (p *placer) branchInstr(pos int, w int32, uncond bool) {
	for _, l := range p.targets {
		p.target(l)
	}
	if p.exits(p.targets) && !p.wrap {
		p.exit(pos, w)
	} else {
		p.need(pos, w)
		p.add(w)
	}
	for _, l := range p.targets {
		p.branch(l)
	}
	if uncond {
		p.c, p.entry = dead, false
	}
}

// ret handles a return at pos (skip: 1, or 0 for the one a tail call made a
// call gets). When the body can be wrapped, a return that needs a check
// becomes a branch to the block's end, where the check is; in FlagBudget,
// so does any other when the function turns out counted (the frame is
// given back there).
func (p *placer) ret(pos int, skip int32) {
	if skip == 0 && (!p.wrap || p.c < 0) {
		// Inserted in dead code (FlagBudget wraps every function).
		p.edits = append(p.edits, edit{pos: int32(pos), kind: editReturn, w: uint32(len(p.frames) - 1)})
		p.c, p.entry = dead, false
		return
	}
	if p.wrap && p.c >= 0 && (p.c+1 > exitSlack || p.depth) {
		needs := p.c+1 > exitSlack
		p.edits = append(p.edits, edit{pos: int32(pos), skip: skip, kind: editReturn, w: uint32(len(p.frames) - 1), flag: needs})
		p.add(1)
		if needs {
			p.route(p.c, p.entry)
		} else {
			p.returned = true
			p.exitAllC = max32(p.exitAllC, p.c)
			p.exitAllEntry = p.exitAllEntry || p.entry
		}
	} else {
		p.exit(pos, 1)
	}
	p.c, p.entry = dead, false
}

// route sends an exit at c to the check after the block around the body.
func (p *placer) route(c int32, entry bool) {
	p.routed = true
	p.exitC = max32(p.exitC, c)
	p.exitEntry = p.exitEntry || entry
}

// final handles the function's final end at pos: the exits that need a
// check share one, after the block around the body if any exit but the
// fallthrough needs it, otherwise before the end. A counted function
// (FlagBudget) gives its frame back at the same place: after the block,
// which every exit but a tail call then reaches, or before the end if the
// end is the only exit.
func (p *placer) final(pos int) {
	if p.depth {
		p.decide()
	}
	if p.counted && (p.routed || p.returned) {
		p.join(p.exitC, p.exitEntry)
		p.join(p.exitAllC, p.exitAllEntry)
		p.wrapped = true
		check := p.c > exitSlack
		p.edits = append(p.edits, edit{pos: int32(pos), kind: editWrapClose, w: charge(p.c), ord: p.labels, flag: check})
		if check {
			p.stats[reasonExit]++
			if p.entry {
				p.induced++
			}
			p.c, p.entry = 0, false
		}
		return
	}
	if !p.routed {
		p.exit(pos, 0)
		if p.counted {
			p.edits = append(p.edits, edit{pos: int32(pos), kind: editStackExit})
		}
		return
	}
	p.join(p.exitC, p.exitEntry)
	if p.c <= exitSlack {
		return // no exit needs a check: no block
	}
	p.wrapped = true
	p.edits = append(p.edits, edit{pos: int32(pos), kind: editWrapClose, w: charge(p.c), ord: p.labels, flag: true})
	p.stats[reasonExit]++
	if p.entry {
		p.induced++
	}
	p.c, p.entry = 0, false
}

// afterCall: a call returns with the callee's last piece (at most
// exitSlack) and the return to pay; a tail call does not come back. A
// tail call wazero makes as a call is followed by a return inserted at
// end (after its immediates), live or not: the code after it was typed
// as unreachable.
func (p *placer) afterCall(how int, end int) {
	if how == tailJump {
		p.c, p.entry = dead, false
		return
	}
	if p.c >= 0 {
		p.c, p.entry = exitSlack+retCost, false
	}
	if how == tailCall {
		p.ret(end, 0)
	}
}
