package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Check placement (FlagMemory and FlagBudget).
//
// Every instruction has a cost in units (weight): about a nanosecond of a
// dependent chain of simple instructions, so 1 for most, more for loads,
// calls, divisions, br_table and the like, 0 for the structure (block,
// loop, end...), which compiles to nothing. A load costs 16: one that misses
// the caches and the TLB, in a chain of such loads, takes 100-200 ns on a
// VM, the slowest work per unit there is (a store does not wait). A forward
// pass over each function's structured control flow tracks c, the worst
// case over every path reaching a point of the units run since the path's
// last check, taking the maximum where paths join (after an end, at an
// else, at a branch target), and inserts a check wherever a rule below
// would be broken. The pass is exact for structured code: a loop header
// always gets a check, so a back edge carries nothing into the loop.
//
// The rules, with the constants below:
//
//   - no instruction takes c above maxRegion: a check goes before it;
//   - a call (call, call_indirect, call_ref and their return_ forms) is
//     made with c <= callSlack: the callee starts at c = callSlack + the
//     call's weight, and its first check charges that (the caller's share:
//     a recursion that only descends is charged too);
//   - a function exits (return, the final end, a branch to the function's
//     label) with c <= exitSlack, and after a call returns the caller goes
//     on from c = exitSlack + retCost. So a path that returned from a call
//     always passes a check before its own function exits: unwinding a
//     recursion of any depth (wazero's stack holds millions of frames, at
//     ~25 ns a frame once they no longer fit in the caches) runs a check
//     per frame. When more than the final end needs that check, the body
//     is wrapped in a block of the function's results, its returns become
//     branches to the block's end, and one check after it serves them all
//     (in FlagMemory, not for functions with several results; FlagBudget
//     adds a type [] -> results for their block). FlagBudget also wraps
//     the body of every function it counts on the stack (stack.go) that
//     has more exits than its final end: the frame is given back there;
//   - a landing whose cost cannot be known statically (a catch, catch_all,
//     or try_table handler: reached from any throw in the try, or in a
//     callee) gets a check at once, charged maxRegion;
//   - a bulk memory or table instruction, whose time grows with its
//     length, is followed by a check at once (FlagBudget charges the length
//     there): at most one runs between two checks.
//
// No path runs more than maxRegion units without passing a check, across
// calls and returns too (the callee's first stretch and the caller's last
// add up to at most maxRegion; the caller's next stretch starts from the
// callee's last, at most exitSlack). One exception, bounded (FlagMemory
// only): in a function with several results (not wrapped), a try_table
// handler that is the function's own label (a branch out of the function)
// lands in the caller with what its thrower ran since a check, at most
// maxRegion, and the caller's next stretch is at most maxRegion.
//
// The first check on a path from the function's entry is marked (first):
// in a function FlagBudget counts on the stack it also tests the stack
// counter, which every path to a call then does (stack.go). A handler's
// landing inherits the entry paths of the try around it: a throw there
// may precede any check.
//
// Each check charges (FlagBudget) the cost c of the paths that end at it,
// so the budget falls by at least the units run. A loop header charges the
// maximum of its entry edge and its back edges, unless the entry edge costs
// much more than the back edges (a tight loop after a long stretch, or
// after the callSlack a lazy function starts with): then a check goes
// before the loop to charge the entry edge, and the header charges only the
// back edges.
//
// A function begins with a check (eager) or not (lazy): lazily, every path
// from the entry gets a check where the rules need one, before a call, an
// exit or maxRegion; a Go function, whose body is a loop, then checks once
// per call at its loop header rather than twice. The pass tries lazy first,
// and places the function again eagerly when lazy would insert more than
// maxLazyChecks checks on entry paths (fewer copies of the check).
const (
	// maxRegion bounds the units between two checks on any path.
	maxRegion = 2048
	// callSlack bounds the units run since the last check at a call.
	callSlack = 384
	// exitSlack bounds the units run since the last check at an exit.
	exitSlack = 16
	// retCost is a return's weight (a frame's unwinding measured ~25 ns).
	retCost = 8
	// unknownCost is c at a landing of unknown cost; charged maxRegion.
	unknownCost = 1 << 28
	// maxLazyChecks: see above.
	maxLazyChecks = 4

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

// Frame kinds.
const (
	frameFunc = iota
	frameBlock
	frameLoop
	frameIf
	frameTry // legacy exception handling: try ... catch ... end / delegate
)

// dead is c in unreachable code.
const dead = -1

type frame struct {
	kind    byte
	hasElse bool
	// br: the maximum c of the branches to the label (block, if, try);
	// for a loop, of its back edges.
	br int32
	// start: c after if (for else and the implicit else), after try (a
	// dead try has dead handlers), at a loop's entry edge.
	start int32
	// ends: c at the end of an if's then branch (once else is seen), or
	// the maximum over a try's body and handlers ended so far.
	ends int32
	// The same for the entry flag (placer.entry).
	brEntry, startEntry, endsEntry bool
	// pre, head: a loop's edits for the check before it (editNone unless
	// needed) and at its header; -1 in dead code.
	pre, head int
	// The stack estimate (FlagBudget, stack.go): sets counts the
	// local.set and local.tee inside, arity the structure's parameters and
	// results; landing: a handler lands at the label; try: a try_table or
	// legacy try, whose handlers catch what its calls throw.
	sets, arity  uint32
	landing, try bool
}

// Edit kinds.
const (
	editNone       = iota // a dropped placeholder
	editCheck             // the check, charging w
	editTee               // local.tee of the bulk local, before a bulk instruction
	editBulk              // charge the bulk length, then the check charging w
	editFunc              // a function index (skip bytes) rewritten to w
	editWrapOpen          // wrapped: block (the function's results)
	editWrapClose         // wrapped: end, then the check charging w
	editReturn            // return (skip 1; or inserted, skip 0): br w when wrapped and flag or counted
	editStackEnter        // counted: the entry (stack.go)
	editStackExit         // counted: give the frame back
	editResync            // counted, with a handler: a landing sets the counter back
	editByte              // the byte w (skip: the opcode it replaces)
)

type edit struct {
	pos, skip int32
	kind      byte
	w         uint32
	// ord: the number of the function's labels opened before the
	// inserted code (label names move past its if).
	ord uint32
	// flag: editReturn, the exit needs the check after the block around
	// the body; editWrapClose, a check follows the block; editCheck, a
	// handler lands here (editResync after the check).
	flag bool
	// first: a check (editCheck, editBulk) that is the first on some path
	// from the function's entry and not at an exit (only an exit follows
	// those): in a counted function it also tests the stack counter
	// (stack.go).
	first bool
}

// placer holds one function's analysis; its slices are reused.
type placer struct {
	w      *rewriter
	edits  []edit
	frames []frame
	c      int32
	// entry: some path from the function's entry reaches here without
	// a check (c's share of callSlack is then the caller's).
	entry   bool
	lazy    bool
	induced int // lazy: checks inserted on entry paths
	labels  uint32
	targets []uint32
	// wrap: the function's exits may go through one check after a block
	// around its body, of block type bt (its results); exitC and
	// exitEntry: the exits sent there but the fallthrough; routed: there
	// are such exits; wrapped: the block is emitted.
	wrap, routed, wrapped bool
	bt                    []byte
	exitC                 int32
	exitEntry             bool
	// The stack bound (FlagBudget: depth; stack.go): the function's
	// parameters, declared locals and results, whether it uses v128 and
	// the index of the local that would keep the counter (savedIndex);
	// what the estimate counts (n instructions, merges, args); whether it
	// calls and has handlers; exitAllC, exitAllEntry: the returns that
	// need no check (they go through the block too when counted); returned:
	// there are such returns. counted, frame and saved (-1: none) are
	// decided at the final end.
	depth                  bool
	params, results        uint32
	locals                 uint64
	v128, fnV128           bool
	savedIndex             int64
	n, merges, args        uint64
	hasCall, handlers      bool
	exitAllC               int32
	exitAllEntry, returned bool
	counted                bool
	frame                  int32
	saved                  int64
	// stats counts the checks placed, by reason (tests and tuning).
	stats [numReasons]int
}

// Why a check was placed (placer.stats).
const (
	reasonEntry  = iota // an eager function's entry
	reasonLazy          // (a function placed lazily: counts functions)
	reasonLoop          // a loop header
	reasonPre           // before a loop, for its entry edge
	reasonRegion        // maxRegion
	reasonCall          // callSlack
	reasonExit          // exitSlack
	reasonBulk          // after a bulk instruction
	numReasons
)

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}

func (p *placer) add(w int32) {
	if p.c >= 0 {
		p.c += w
	}
}

// check inserts a check at pos charging c.
func (p *placer) check(pos int, why int) {
	p.stats[why]++
	p.edits = append(p.edits, edit{pos: int32(pos), kind: editCheck, w: charge(p.c), ord: p.labels, first: (p.entry && why != reasonExit) || why == reasonEntry})
	if p.entry {
		p.induced++
	}
	p.c, p.entry = 0, false
}

// charge is what a check at c charges: c, or maxRegion for an unknown c.
func charge(c int32) uint32 {
	if c > maxRegion {
		return maxRegion
	}
	return uint32(max32(c, 1))
}

// need inserts a check at pos if an instruction of weight w there would
// take c beyond maxRegion.
func (p *placer) need(pos int, w int32) {
	if p.c >= 0 && p.c+w > maxRegion {
		p.check(pos, reasonRegion)
	}
}

// exit inserts a check at pos if an exit of weight w there would leave
// more than exitSlack units for the caller, then adds w.
func (p *placer) exit(pos int, w int32) {
	if p.c >= 0 && p.c+w > exitSlack {
		p.check(pos, reasonExit)
	}
	p.add(w)
}

// call inserts a check at pos if a call of weight w there would hand the
// callee more than callSlack units.
func (p *placer) call(pos int, w int32) {
	if p.c >= 0 && p.c+w > callSlack {
		p.check(pos, reasonCall)
	}
}

// target returns the frame of branch label l.
func (p *placer) target(l uint32) *frame {
	if uint64(l) >= uint64(len(p.frames)) {
		fail(fmt.Sprintf("label %d out of range", l))
	}
	return &p.frames[len(p.frames)-1-int(l)]
}

// branch records a branch to label l with the current c.
func (p *placer) branch(l uint32) {
	p.branchWith(l, p.c, p.entry)
}

func (p *placer) branchWith(l uint32, c int32, entry bool) {
	f := p.target(l)
	if c < 0 {
		return
	}
	if f.kind == frameFunc {
		if p.wrap {
			p.route(c, entry)
		}
		// Otherwise an exit, checked before the branch; or a
		// try_table handler that exits, of unknown cost: its thrower
		// ran at most maxRegion since a check.
		return
	}
	if c > f.br {
		f.br = c
	}
	f.brEntry = f.brEntry || entry
}

// join sets c to the maximum of c and o (dead is below every c).
func (p *placer) join(o int32, entry bool) {
	if o > p.c {
		p.c = o
	}
	if o >= 0 && entry {
		p.entry = true
	}
}

// exits reports whether any of the branch labels is the function's (an
// exit).
func (p *placer) exits(labels []uint32) bool {
	for _, l := range labels {
		if uint64(l) == uint64(len(p.frames))-1 {
			return true
		}
	}
	return false
}

// placeFunction analyses one function's expression (code, through its final
// end), whose results have block type bt (nil: several), and leaves its
// edits in p.edits.
func (p *placer) placeFunction(code []byte, bt []byte) {
	p.bt = bt
	saved := p.stats
	if p.analyse(code, true) {
		p.stats[reasonLazy]++
		return
	}
	p.stats = saved
	p.analyse(code, false)
}

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
	r := &reader{b: code}
	for {
		if lazy && p.induced > maxLazyChecks {
			return false
		}
		if r.done() {
			fail("function body without end")
		}
		pos := r.pos
		op := r.byte()
		p.n += values(op)
		switch op {
		case 0x02, 0x06: // block try
			p.need(pos, 0)
			arity := p.blockType(r)
			k := byte(frameBlock)
			if op == 0x06 {
				k = frameTry
				p.handlers = true
			}
			p.frames = append(p.frames, frame{kind: k, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity, try: op == 0x06})
			p.labels++
		case 0x1f: // try_table bt catch*
			p.need(pos, 0)
			arity := p.blockType(r)
			p.handlers = true
			// The handlers' labels are those around the try_table; a
			// handler is entered at an unknown cost.
			for n := r.u32(); n > 0; n-- {
				switch k := r.byte(); k {
				case 0x00, 0x01:
					r.u32()
					l := r.u32()
					p.landing(l)
					if p.c >= 0 {
						p.branchWith(l, unknownCost, p.entry)
					}
				case 0x02, 0x03:
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
		case 0x03: // loop bt
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
				p.edits = append(p.edits, edit{pos: int32(r.pos), kind: editCheck, ord: p.labels, first: p.entry})
				p.stats[reasonLoop]++
				p.c, p.entry = 0, false
			}
			p.frames = append(p.frames, f)
		case 0x04: // if bt
			p.need(pos, 1)
			arity := p.blockType(r)
			p.add(1)
			p.frames = append(p.frames, frame{kind: frameIf, br: dead, start: p.c, ends: dead, startEntry: p.entry, arity: arity})
			p.labels++
		case 0x05: // else
			p.need(pos, 0)
			f := &p.frames[len(p.frames)-1]
			if f.kind != frameIf || f.hasElse {
				fail("else outside if")
			}
			f.hasElse = true
			f.ends, f.endsEntry = p.c, p.entry
			p.c, p.entry = f.start, f.startEntry
		case 0x07, 0x19: // catch tag, catch_all (legacy)
			p.need(pos, 0)
			if op == 0x07 {
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
				p.edits = append(p.edits, edit{pos: int32(r.pos), kind: editResync})
			}
		case 0x18: // delegate l (legacy): ends a try
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
		case 0x0b: // end
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
				p.edits = append(p.edits, edit{pos: int32(r.pos), kind: editResync})
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
		case 0x0c, 0x0d: // br l, br_if l
			l := r.u32()
			p.targets = append(p.targets[:0], l)
			p.branchInstr(pos, 1, op == 0x0c)
		case 0x0e: // br_table l* l
			p.targets = p.targets[:0]
			for n := r.u32(); n > 0; n-- {
				p.targets = append(p.targets, r.u32())
			}
			p.targets = append(p.targets, r.u32())
			p.branchInstr(pos, costBrTable, true)
		case 0xd5, 0xd6: // br_on_null l, br_on_non_null l
			l := r.u32()
			p.targets = append(p.targets[:0], l)
			p.branchInstr(pos, 1, false)
		case 0x0f: // return
			p.ret(pos, 1)
		case 0x00, 0x08, 0x09, 0x0a: // unreachable, throw tag, rethrow l, throw_ref
			p.need(pos, 1)
			if op == 0x08 || op == 0x09 {
				r.u32()
			}
			p.c, p.entry = dead, false
		case 0x10, 0x12: // call f, return_call f
			p.call(pos, costCall)
			start := r.pos
			f := r.u32()
			how := p.callSig(pos, op == 0x12, 0x10, p.funcSig(f))
			if w.remap && f >= w.yield {
				p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos - start), kind: editFunc, w: w.fn(f)})
			}
			p.afterCall(how, r.pos)
		case 0x11, 0x13: // call_indirect t table, return_call_indirect
			p.call(pos, costCallIndirect)
			t := r.u32()
			r.u32()
			p.afterCall(p.callSig(pos, op == 0x13, 0x11, p.typeSig(t)), r.pos)
		case 0x14, 0x15: // call_ref t, return_call_ref t
			p.call(pos, costCallIndirect)
			t := r.u32()
			p.afterCall(p.callSig(pos, op == 0x15, 0x14, p.typeSig(t)), r.pos)
		case 0xd2: // ref.func f
			p.need(pos, 1)
			start := r.pos
			f := r.u32()
			if w.remap && f >= w.yield {
				p.edits = append(p.edits, edit{pos: int32(start), skip: int32(r.pos - start), kind: editFunc, w: w.fn(f)})
			}
			p.add(1)
		case 0x23, 0x24: // global.get, global.set
			p.need(pos, 1)
			w.global(r.u32())
			p.add(1)
		case 0xfc, 0xfd, 0xfe:
			sub := r.u32()
			p.v128 = p.v128 || op == 0xfd
			cost := weight(op, sub)
			p.need(pos, cost)
			switch op {
			case 0xfc:
				w.fc(r, sub)
			case 0xfd:
				w.simd(r, sub)
			default:
				switch sub {
				case 0x01, 0x02:
					// memory.atomic.wait32/64 blocks (on a shared
					// memory) for as long as the guest asks, where no
					// check runs.
					fail("memory.atomic.wait cannot be interrupted")
				case 0x03: // atomic.fence
					r.byte()
				default:
					w.memArg(r)
				}
			}
			if op == 0xfc && bulk(sub) && p.c >= 0 {
				if w.remap {
					w.usedBulk = true
					p.edits = append(p.edits, edit{pos: int32(pos), kind: editTee, ord: p.labels})
				}
				p.add(cost)
				p.edits = append(p.edits, edit{pos: int32(r.pos), kind: editBulk, w: charge(p.c), ord: p.labels, first: p.entry})
				p.stats[reasonBulk]++
				if p.entry {
					p.induced++
				}
				p.c, p.entry = 0, false
				continue
			}
			p.add(cost)
		default:
			if op == 0x21 || op == 0x22 { // local.set, local.tee
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

// How a call returns (callSig).
const (
	plainCall = iota // it returns
	tailJump         // a tail call wazero makes a jump: it does not come back
	tailCall         // a tail call wazero makes a call: made a call, then a return
)

// callSig accounts for a call at pos of type s (tail: a return_call*,
// whose plain opcode is callOp) in the stack estimate and says how it
// returns. A counted function gives its frame back before a tail jump; a
// tail call whose parameters or results wazero passes on the stack
// becomes the call then return it is in wazero (stack.go).
func (p *placer) callSig(pos int, tail bool, callOp byte, s sig) int {
	if !p.depth {
		if tail {
			return tailJump
		}
		return plainCall
	}
	if a := 16 * (uint64(s.params) + uint64(s.results)); a > p.args {
		p.args = a
	}
	p.v128 = p.v128 || s.v128
	// Its results, and after it wazero reloads the memory's base and
	// length.
	p.n += uint64(s.results) + 2
	if !tail {
		p.hasCall = true
		return plainCall
	}
	if s.regsOnly() {
		p.edits = append(p.edits, edit{pos: int32(pos), kind: editStackExit})
		return tailJump
	}
	for _, f := range p.frames {
		if f.try {
			fail("a tail call with parameters or results on wazero's stack inside a try block")
		}
	}
	p.hasCall = true
	p.edits = append(p.edits, edit{pos: int32(pos), skip: 1, kind: editByte, w: uint32(callOp)})
	return tailCall
}

// funcSig is the type of function f (FlagBudget; the zero sig otherwise).
func (p *placer) funcSig(f uint32) sig {
	if !p.depth {
		return sig{}
	}
	if uint64(f) >= uint64(len(p.w.funcTypes)) {
		fail(fmt.Sprintf("function index %d out of range", f))
	}
	return p.typeSig(p.w.funcTypes[f])
}

// typeSig is type t (FlagBudget; the zero sig otherwise).
func (p *placer) typeSig(t uint32) sig {
	if !p.depth {
		return sig{}
	}
	if uint64(t) >= uint64(len(p.w.sigs)) {
		fail(fmt.Sprintf("type index %d out of range", t))
	}
	return p.w.sigs[t]
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
	switch c := r.b[r.pos]; c {
	case 0x40:
		r.pos++
		return 0
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69, 0x63, 0x64:
		r.valType()
		return 1
	}
	s := p.typeSig(r.typeIndex())
	return s.params + s.results
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

// landing marks label l as a handler's landing.
func (p *placer) landing(l uint32) {
	p.target(l).landing = true
}

// closeMerge adds closed structure f's merge to the estimate: a value
// for each local assigned inside (at most every local) and each of its
// parameters and results, and 2 (wazero's own variables).
func (p *placer) closeMerge(f *frame) {
	if !p.depth {
		return
	}
	m := uint64(f.sets)
	if pl := uint64(p.params) + p.locals; m > pl {
		m = pl
	}
	p.merges += m + uint64(f.arity) + 2
	parent := &p.frames[len(p.frames)-1]
	parent.sets += f.sets
	if f.landing && f.kind == frameLoop && f.head >= 0 {
		p.edits[f.head].flag = true
	}
}

// decide says at the function's final end whether it is counted, and
// whether it keeps the counter in a local (its frame is sized once its
// checks are placed: sizeFrame).
func (p *placer) decide() {
	p.merges += uint64(p.results) + 2
	p.counted = p.hasCall
	p.saved = -1
	if p.counted && p.handlers {
		p.saved = p.savedIndex
	}
}

// sizeFrame sets the counted function's frame estimate (code: its body):
// its values, those of its checks and of the counter's code (8 each), and
// its merges, as few as the liveness of its locals allows (frame.go).
func (p *placer) sizeFrame(code []byte) {
	checks := uint64(0)
	for _, e := range p.edits {
		if e.kind == editCheck || e.kind == editBulk || (e.kind == editWrapClose && e.flag) {
			checks++
		}
	}
	merges := p.merges
	a := &p.w.frame
	a.w = p.w
	if m, ok := a.mergeBound(code, p.params, p.locals); ok {
		merges = m + uint64(p.results) + 2
	}
	p.frame = frameEstimate(uint64(p.params), p.locals, p.n+8*checks+8, merges, p.args, p.v128, p.w.stackLimit)
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

// emit appends code with p.edits applied to out.
func (p *placer) emit(code []byte, out []byte) []byte {
	w := p.w
	last := 0
	for _, e := range p.edits {
		out = append(out, code[last:e.pos]...)
		last = int(e.pos + e.skip)
		label := false // the inserted code opens a label (a check's if, the block)
		switch e.kind {
		case editNone:
		case editWrapOpen:
			if p.wrapped {
				out = append(append(out, 0x02), p.bt...)
				label = true
			}
		case editWrapClose:
			out = append(out, 0x0b)
			if e.flag {
				out = w.appendCheck(out, e.w, e.first && p.counted)
				label = true
			}
			if p.counted {
				out = appendStackExit(out, w.stack, p.frame, p.saved)
			}
		case editReturn:
			if p.wrapped && (e.flag || p.counted) {
				out = wasmbin.AppendUint64(append(out, 0x0c), uint64(e.w))
			} else {
				out = append(out, 0x0f)
			}
		case editCheck:
			out = w.appendCheck(out, e.w, e.first && p.counted)
			label = true
			if e.flag && p.saved >= 0 {
				out = appendResync(out, w.stack, p.saved)
			}
		case editTee:
			out = append(out, 0x22)
			out = wasmbin.AppendUint64(out, uint64(w.bulkLocal))
		case editBulk:
			out = append(out, w.charge...)
			out = w.appendCheck(out, e.w, e.first && p.counted)
			label = true
		case editFunc:
			out = wasmbin.AppendUint64(out, uint64(e.w))
		case editStackEnter:
			if p.counted {
				out = appendStackEnter(out, w.stack, p.frame, p.saved)
				label = true
			}
		case editStackExit:
			if p.counted {
				out = appendStackExit(out, w.stack, p.frame, p.saved)
			}
		case editResync:
			if p.saved >= 0 {
				out = appendResync(out, w.stack, p.saved)
			}
		case editByte:
			out = append(out, byte(e.w))
		}
		if w.remap && label {
			w.curOrds = append(w.curOrds, e.ord)
		}
	}
	return append(out, code[last:]...)
}
