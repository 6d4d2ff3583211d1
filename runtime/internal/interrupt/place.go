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
//     there): at most one runs between two checks. A memory.fill,
//     memory.copy or memory.init longer than bulkChunk runs in pieces with a
//     check between two (bulk.go): its weight includes splitCost.
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
)

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
	editSplit             // a bulk instruction (skip) split, its helper w (bulk.go); a check follows
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
				out = append(append(out, wasmbin.OpcodeBlock), p.bt...)
				label = true
			}
		case editWrapClose:
			out = append(out, wasmbin.OpcodeEnd)
			if e.flag {
				out = w.appendCheck(out, e.w, e.first && p.counted)
				label = true
			}
			if p.counted {
				out = appendStackExit(out, w.stack, p.frame, p.saved)
			}
		case editReturn:
			if p.wrapped && (e.flag || p.counted) {
				out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeBr), uint64(e.w))
			} else {
				out = append(out, wasmbin.OpcodeReturn)
			}
		case editCheck:
			out = w.appendCheck(out, e.w, e.first && p.counted)
			label = true
			if e.flag && p.saved >= 0 {
				out = appendResync(out, w.stack, p.saved)
			}
		case editTee:
			out = append(out, wasmbin.OpcodeLocalTee)
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
		case editSplit:
			out = w.appendSplit(out, code[e.pos:e.pos+e.skip], e.w)
			label = true
		}
		if w.remap && label {
			w.curOrds = append(w.curOrds, e.ord)
		}
	}
	return append(out, code[last:]...)
}
