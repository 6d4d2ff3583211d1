package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// analyse runs the pass, lazily or not; a lazy pass gives up (false) once
// it inserts more than maxLazyChecks checks on entry paths.
func (p *placer) analyse(code []byte, lazy bool) bool {
	w := p.w
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
		switch op {
		case wasmbin.OpcodeBlock, wasmbin.OpcodeTry:
			p.need(pos, 0)
			arity := p.blockType(r)
			k := byte(frameBlock)
			if op == wasmbin.OpcodeTry {
				k = frameTry
				p.handlers = true
			}
			p.frames = append(p.frames, frame{kind: k, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity, try: op == wasmbin.OpcodeTry})
			p.labels++
		case wasmbin.OpcodeTryTable: // try_table bt catch*
			p.need(pos, 0)
			arity := p.blockType(r)
			p.handlers = true
			// The handlers' labels are those around the try_table; a
			// handler is entered at an unknown cost.
			for n := r.u32(); n > 0; n-- {
				switch k := r.byte(); k {
				case wasmbin.CatchTag, wasmbin.CatchTagRef:
					r.u32()
					l := r.u32()
					p.landing(l)
					if p.c >= 0 {
						p.branchWith(l, unknownCost, p.entry)
					}
				case wasmbin.CatchAllLabel, wasmbin.CatchAllRefLbl:
					l := r.u32()
					p.landing(l)
					if p.c >= 0 {
						p.branchWith(l, unknownCost, p.entry)
					}
				default:
					fail(fmt.Sprintf("unknown catch kind %d", k))
				}
			}
			p.frames = append(p.frames, frame{kind: frameBlock, br: dead, start: p.c, ends: dead, arity: arity, try: true})
			p.labels++
		case wasmbin.OpcodeLoop: // loop bt
			p.need(pos, 0)
			arity := p.blockType(r)
			f := frame{kind: frameLoop, br: dead, start: p.c, startEntry: p.entry, pre: -1, head: -1, arity: arity}
			if p.c >= 0 {
				f.pre = len(p.edits)
				p.edits = append(p.edits, edit{pos: int32(pos), kind: editNone, ord: p.labels})
			}
			p.labels++
			if p.c >= 0 {
				f.head = len(p.edits)
				p.edits = append(p.edits, edit{pos: int32(r.pos()), kind: editCheck, ord: p.labels, first: p.entry})
				p.stats[reasonLoop]++
				p.c, p.entry = 0, false
			}
			p.frames = append(p.frames, f)
		case wasmbin.OpcodeIf: // if bt
			p.need(pos, 1)
			arity := p.blockType(r)
			p.add(1)
			p.frames = append(p.frames, frame{kind: frameIf, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity})
			p.labels++
		case wasmbin.OpcodeElse:
			p.need(pos, 0)
			f := &p.frames[len(p.frames)-1]
			if f.kind != frameIf || f.hasElse {
				fail("else outside if")
			}
			f.hasElse = true
			f.ends, f.endsEntry = p.c, p.entry
			p.c, p.entry = f.start, f.startEntry
		case wasmbin.OpcodeCatch, wasmbin.OpcodeCatchAll: // catch tag, catch_all (legacy)
			p.need(pos, 0)
			if op == wasmbin.OpcodeCatch {
				r.u32()
			}
			f := &p.frames[len(p.frames)-1]
			if f.kind != frameTry {
				fail("catch outside try")
			}
			f.ends = max32(f.ends, p.c)
			f.endsEntry = f.endsEntry || p.entry
			// A throw in the try may come before any check.
			p.c, p.entry = dead, false
			if f.start >= 0 {
				p.c, p.entry = unknownCost, f.startEntry
			}
			// The handler is a landing.
			if p.depth {
				p.edits = append(p.edits, edit{pos: int32(r.pos()), kind: editResync})
			}
		case wasmbin.OpcodeDelegate: // delegate l (legacy): ends a try
			p.need(pos, 0)
			l := r.u32()
			f := p.frames[len(p.frames)-1]
			if f.kind != frameTry || len(p.frames) < 2 {
				fail("delegate outside try")
			}
			p.frames = p.frames[:len(p.frames)-1]
			p.target(l) // in range of the frames around the try
			p.closeMerge(&f)
			p.join(f.ends, f.endsEntry)
			p.join(f.br, f.brEntry)
		case wasmbin.OpcodeEnd:
			f := p.frames[len(p.frames)-1]
			if f.kind == frameFunc {
				p.final(pos)
				if !r.done() {
					fail("bytes after a function's end")
				}
				return !(lazy && p.induced > maxLazyChecks)
			}
			p.need(pos, 0)
			p.frames = p.frames[:len(p.frames)-1]
			p.closeMerge(&f)
			if p.depth && f.landing && f.kind != frameLoop {
				p.edits = append(p.edits, edit{pos: int32(r.pos()), kind: editResync})
			}
			switch f.kind {
			case frameLoop:
				p.closeLoop(&f)
			case frameIf:
				if f.hasElse {
					p.join(f.ends, f.endsEntry)
				} else {
					p.join(f.start, f.startEntry)
				}
			case frameTry:
				p.join(f.ends, f.endsEntry)
			}
			if f.kind != frameLoop { // a loop's branches go to its header
				p.join(f.br, f.brEntry)
			}
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
		case wasmbin.OpcodeBrOnNull, wasmbin.OpcodeBrOnNonNull: // br_on_null l, br_on_non_null l
			l := r.u32()
			p.targets = append(p.targets[:0], l)
			p.branchInstr(pos, 1, false)
		case wasmbin.OpcodeReturn:
			p.ret(pos, 1)
		case wasmbin.OpcodeUnreachable, wasmbin.OpcodeThrow, wasmbin.OpcodeRethrow, wasmbin.OpcodeThrowRef: // throw tag, rethrow l
			p.need(pos, 1)
			if op == wasmbin.OpcodeThrow || op == wasmbin.OpcodeRethrow {
				r.u32()
			}
			p.c, p.entry = dead, false
		case wasmbin.OpcodeCall, wasmbin.OpcodeReturnCall: // call f, return_call f
			p.call(pos, costCall)
			start := r.pos()
			f := r.u32()
			nf := w.fn(f)
			how := p.callSig(pos, op == wasmbin.OpcodeReturnCall, wasmbin.OpcodeCall, p.funcSig(f))
			if nf != f {
				p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos() - start), kind: editFunc, w: nf})
			}
			p.afterCall(how, r.pos())
		case wasmbin.OpcodeCallIndirect, wasmbin.OpcodeReturnCallIndirect: // call_indirect t table, return_call_indirect
			p.call(pos, costCallIndirect)
			t := r.u32()
			r.u32()
			p.afterCall(p.callSig(pos, op == wasmbin.OpcodeReturnCallIndirect, wasmbin.OpcodeCallIndirect, p.typeSig(t)), r.pos())
		case wasmbin.OpcodeCallRef, wasmbin.OpcodeReturnCallRef: // call_ref t, return_call_ref t
			p.call(pos, costCallIndirect)
			t := r.u32()
			p.afterCall(p.callSig(pos, op == wasmbin.OpcodeReturnCallRef, wasmbin.OpcodeCallRef, p.typeSig(t)), r.pos())
		case wasmbin.OpcodeRefFunc: // ref.func f
			p.need(pos, 1)
			start := r.pos()
			f := r.u32()
			if nf := w.fn(f); nf != f {
				p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos() - start), kind: editFunc, w: nf})
			}
			p.add(1)
		case wasmbin.OpcodeGlobalGet, wasmbin.OpcodeGlobalSet:
			p.need(pos, 1)
			w.global(r.u32())
			p.add(1)
		case wasmbin.OpcodePrefixMisc, wasmbin.OpcodePrefixVec, wasmbin.OpcodePrefixAtomic:
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
				if h, ok := w.split(sub, code[imm:r.pos()]); ok {
					// In pieces (bulk.go): the inline test in place
					// of the instruction, then a check.
					cost += splitCost
					p.need(pos, cost)
					w.usedBulk = true
					p.edits = append(p.edits, edit{pos: int32(pos), skip: int32(r.pos() - pos), kind: editSplit, w: h, ord: p.labels})
					p.add(cost)
					p.edits = append(p.edits, edit{pos: int32(r.pos()), kind: editCheck, w: charge(p.c), ord: p.labels, first: p.entry})
					p.stats[reasonBulk]++
					if p.entry {
						p.induced++
					}
					p.c, p.entry = 0, false
					continue
				}
				p.need(pos, cost)
				if w.remap {
					w.usedBulk = true
					p.edits = append(p.edits, edit{pos: int32(pos), kind: editTee, ord: p.labels})
				}
				p.add(cost)
				p.edits = append(p.edits, edit{pos: int32(r.pos()), kind: editBulk, w: charge(p.c), ord: p.labels, first: p.entry})
				p.stats[reasonBulk]++
				if p.entry {
					p.induced++
				}
				p.c, p.entry = 0, false
				continue
			}
			p.need(pos, cost)
			p.add(cost)
		default:
			if op == wasmbin.OpcodeLocalSet || op == wasmbin.OpcodeLocalTee {
				p.frames[len(p.frames)-1].sets++
			}
			cost := weight(op, 0)
			p.need(pos, cost)
			w.immediates(r, op)
			p.add(cost)
		}
	}
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

// closeLoop sets the charge of a loop's header check, and of the check
// before it when its entry edge costs much more than its back edges. A
// loop entered by dead code has no checks.
func (p *placer) closeLoop(f *frame) {
	if f.head < 0 {
		return
	}
	entry, back := f.start, f.br
	head := entry
	switch {
	case back < 0: // no back edge: the header is passed once
	case entry <= 4*back+64:
		// Over-charging the back edges a little costs yields, rarer
		// than a check per entry.
		head = max32(entry, back)
	default:
		pre := &p.edits[f.pre]
		pre.kind, pre.w, pre.first = editCheck, charge(entry), f.startEntry
		p.edits[f.head].first = false // the check before it tested the counter
		p.stats[reasonPre]++
		if f.startEntry {
			p.induced++
		}
		head = back
	}
	p.edits[f.head].w = charge(head)
}

// blockType reads a block type and returns the structure's arity, its
// parameters and results (FlagBudget; 0 otherwise).
func (p *placer) blockType(r *reader) uint32 {
	if !p.depth {
		r.blockType()
		return 0
	}
	if r.done() {
		fail("unexpected end of module")
	}
	switch c := r.peek(); c {
	case wasmbin.BlockTypeEmpty:
		r.byte()
		return 0
	case wasmbin.ValueTypeI32, wasmbin.ValueTypeI64, wasmbin.ValueTypeF32, wasmbin.ValueTypeF64, wasmbin.ValueTypeV128,
		wasmbin.ValueTypeFuncref, wasmbin.ValueTypeExternref, wasmbin.ValueTypeExnref, wasmbin.ValueTypeRefNull, wasmbin.ValueTypeRef:
		r.valType()
		return 1
	}
	s := p.typeSig(r.typeIndex())
	return s.params + s.results
}

// landing marks label l as a handler's landing.
func (p *placer) landing(l uint32) {
	p.target(l).landing = true
}
