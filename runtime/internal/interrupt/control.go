package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The structured control instructions of the pass (analyse.go): the
// frames they open and close, and how the cost flows between them.

// openBlock handles block bt or try bt (legacy) at pos.
func (p *placer) openBlock(r *reader, pos int, op byte) {
	p.need(pos, 0)
	arity := p.blockType(r)
	k := byte(frameBlock)
	if op == wasmbin.OpcodeTry {
		k = frameTry
		p.handlers = true
	}
	p.frames = append(p.frames, frame{kind: k, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity, try: op == wasmbin.OpcodeTry})
	p.labels++
}

// openTryTable handles try_table bt catch* at pos.
func (p *placer) openTryTable(r *reader, pos int) {
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
}

// openLoop handles loop bt at pos: the loop's header gets a check, and
// the place before it one that closeLoop may turn into a check.
func (p *placer) openLoop(r *reader, pos int) {
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
}

// openIf handles if bt at pos.
func (p *placer) openIf(r *reader, pos int) {
	p.need(pos, 1)
	arity := p.blockType(r)
	p.add(1)
	p.frames = append(p.frames, frame{kind: frameIf, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity})
	p.labels++
}

// elseInstr handles else at pos: the else arm starts where the if did.
func (p *placer) elseInstr(pos int) {
	p.need(pos, 0)
	f := &p.frames[len(p.frames)-1]
	if f.kind != frameIf || f.hasElse {
		fail("else outside if")
	}
	f.hasElse = true
	f.ends, f.endsEntry = p.c, p.entry
	p.c, p.entry = f.start, f.startEntry
}

// catch handles catch tag or catch_all (legacy) at pos: a handler of the
// try around it.
func (p *placer) catch(r *reader, pos int, op byte) {
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
}

// delegate handles delegate l (legacy) at pos: it ends a try.
func (p *placer) delegate(r *reader, pos int) {
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
}

// end handles end at pos: it closes a frame, or the function (true).
func (p *placer) end(r *reader, pos int) bool {
	f := p.frames[len(p.frames)-1]
	if f.kind == frameFunc {
		p.final(pos)
		if !r.done() {
			fail("bytes after a function's end")
		}
		return true
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
	return false
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
