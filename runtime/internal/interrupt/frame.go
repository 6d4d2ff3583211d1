package interrupt

import (
	"math/bits"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The liveness of locals, to count fewer merges in the frame estimate
// (stack.go).
//
// At a merge of control flow (the end of a block or if, a loop's header),
// wazero's compiler makes a new value (a block parameter) for each local
// whose value differs between the paths: one that the structure assigns.
// frameEstimate counts min(locals, assignments inside) of them, as if every
// one were live. At the end of a block or if, the register allocator only
// ever has a value to keep there if the local is live (some path from there
// reads it before writing it): the count is min(live locals, assignments
// inside). A loop header's values may be given a stack slot whether or not
// they are used (wazero allocates the header before its back edges), so
// loops keep frameEstimate's count. For a Go function, whose dispatch is
// hundreds of nested blocks assigning the same dozen locals (Go's
// registers, dead at most block ends), that is most of the estimate.
//
// mergeBound computes the live locals by a backward pass over the
// function's structured control flow, iterated to a fixed point at each
// loop, within a budget of work; it gives up (the estimate keeps its
// count) on exception handling, whose landings it does not follow, on more
// than 65,536 locals, and past the budget.

// frameWork bounds mergeBound's work: instructions visited times words of
// the live set, over all its iterations.
const frameWork = 1 << 26

// fin is an instruction mergeBound follows.
type fin struct {
	op byte
	// imm: the local of local.get/set/tee; a branch's target (the index
	// of the structure's first instruction, -1 for the function); a
	// structure's end; an end's structure.
	imm int32
	// els: an if's else (-1: none).
	els int32
	// tbl, n: br_table's targets, in frameAnalysis.targets[tbl:tbl+n].
	tbl, n int32
	// sets, arity: a structure's assignments to locals (local.set,
	// local.tee, nested ones included) and its parameters and results.
	sets, arity uint32
}

// frameAnalysis holds mergeBound's state; its slices are reused.
type frameAnalysis struct {
	w       *rewriter
	ins     []fin
	targets []int32
	// label: the live locals at each structure's label (a loop's header,
	// another's end), by the index of its first instruction.
	label  map[int32][]uint64
	liveIn []uint32 // per instruction: the live locals before it
	words  int
	locals uint64
	work   int
}

// mergeBound returns the merge term of the frame estimate of a function
// whose body is code, with params parameters and locals declared locals
// (the sum over its structures of min(live or all locals, assignments
// inside) + arity + 2), or false if it does not apply.
func (a *frameAnalysis) mergeBound(code []byte, params uint32, locals uint64) (uint64, bool) {
	n := uint64(params) + locals
	if n > 1<<16 {
		return 0, false
	}
	a.locals, a.words = n, int((n+63)/64)
	if !a.decode(code) {
		return 0, false
	}
	if a.label == nil {
		a.label = map[int32][]uint64{}
	}
	clear(a.label)
	if cap(a.liveIn) < len(a.ins) {
		a.liveIn = make([]uint32, len(a.ins))
	}
	a.liveIn = a.liveIn[:len(a.ins)]
	a.work = 0
	if !a.backward(0, int32(len(a.ins))-2, make([]uint64, a.words)) {
		return 0, false
	}
	var merges uint64
	for i, in := range a.ins {
		var m uint64
		switch {
		case in.op == wasmbin.OpcodeLoop: // loop: every local it assigns
			m = min(uint64(in.sets), n)
		case in.op == wasmbin.OpcodeEnd && in.imm >= 0: // the end of a block or if: the live ones
			m = min(uint64(in.sets), uint64(a.liveIn[i]))
		default:
			continue
		}
		merges += m + uint64(in.arity) + 2
	}
	return merges, true
}

// decode reads code into a.ins, matching structures and resolving branch
// targets; false where mergeBound does not apply.
func (a *frameAnalysis) decode(code []byte) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isDecode := r.(decodeError); !isDecode {
				panic(r)
			}
			ok = false
		}
	}()
	w := a.w
	a.ins, a.targets = a.ins[:0], a.targets[:0]
	r := newReader(code)
	open := []int32{-1} // the structures open, by first instruction; -1: the function
	target := func(l uint32) int32 {
		if uint64(l) >= uint64(len(open)) {
			fail("label out of range")
		}
		return open[len(open)-1-int(l)]
	}
	for !r.done() {
		in := fin{op: r.byte(), els: -1}
		switch op := in.op; op {
		case wasmbin.OpcodeBlock, wasmbin.OpcodeLoop, wasmbin.OpcodeIf:
			in.arity = w.place.blockType(r)
			open = append(open, int32(len(a.ins)))
		case wasmbin.OpcodeElse:
			s := open[len(open)-1]
			if s < 0 || a.ins[s].op != wasmbin.OpcodeIf || a.ins[s].els >= 0 {
				return false
			}
			a.ins[s].els = int32(len(a.ins))
		case wasmbin.OpcodeEnd:
			s := open[len(open)-1]
			open = open[:len(open)-1]
			in.imm = s
			if s < 0 {
				a.ins = append(a.ins, in)
				return r.done()
			}
			st := &a.ins[s]
			st.imm = int32(len(a.ins))
			in.sets, in.arity = st.sets, st.arity
			if p := open[len(open)-1]; p >= 0 {
				a.ins[p].sets += st.sets
			}
		case wasmbin.OpcodeBr, wasmbin.OpcodeBrIf:
			in.imm = target(r.u32())
		case wasmbin.OpcodeBrTable:
			in.tbl = int32(len(a.targets))
			for k := r.u32() + 1; k > 0; k-- {
				a.targets = append(a.targets, target(r.u32()))
			}
			in.n = int32(len(a.targets)) - in.tbl
		case wasmbin.OpcodeLocalGet, wasmbin.OpcodeLocalSet, wasmbin.OpcodeLocalTee:
			l := r.u32()
			if uint64(l) >= a.locals {
				return false
			}
			in.imm = int32(l)
			if op != wasmbin.OpcodeLocalGet {
				if s := open[len(open)-1]; s >= 0 {
					a.ins[s].sets++
				}
			}
		case wasmbin.OpcodeTry, wasmbin.OpcodeCatch, wasmbin.OpcodeThrow, wasmbin.OpcodeRethrow, wasmbin.OpcodeThrowRef,
			wasmbin.OpcodeDelegate, wasmbin.OpcodeCatchAll, wasmbin.OpcodeTryTable, wasmbin.OpcodeBrOnNull,
			wasmbin.OpcodeBrOnNonNull:
			// Exception handling and br_on_*: landings and branches it
			// does not follow.
			return false
		default:
			w.immediates(r, op)
		}
		a.ins = append(a.ins, in)
	}
	return false // no final end
}

// backward computes the live locals before each instruction of ins[from..to]
// (a structure's body, or the function's), from live, those after to
// (which it overwrites); false once over the work budget.
func (a *frameAnalysis) backward(from, to int32, live []uint64) bool {
	for i := to; i >= from; i-- {
		if a.work += a.words; a.work > frameWork {
			return false
		}
		in := &a.ins[i]
		switch in.op {
		case wasmbin.OpcodeEnd: // the end of the structure starting at s
			s := in.imm
			a.liveIn[i] = popcount(live)
			start := &a.ins[s]
			switch start.op {
			case wasmbin.OpcodeLoop: // loop: the header's live set, to a fixed point
				after := clone(live)
				head := make([]uint64, a.words)
				a.label[s] = head
				for {
					copy(live, after)
					if !a.backward(s+1, i-1, live) {
						return false
					}
					if subset(live, head) {
						break
					}
					or(head, live)
				}
				copy(live, head)
			case wasmbin.OpcodeIf:
				a.label[s] = clone(live)
				after := clone(live)
				if start.els >= 0 {
					if !a.backward(start.els+1, i-1, live) {
						return false
					}
					elseIn := clone(live)
					copy(live, after)
					if !a.backward(s+1, start.els-1, live) {
						return false
					}
					or(live, elseIn)
				} else {
					if !a.backward(s+1, i-1, live) {
						return false
					}
					or(live, after)
				}
			default: // block
				a.label[s] = clone(live)
				if !a.backward(s+1, i-1, live) {
					return false
				}
			}
			i = s // the structure's first instruction is done
		case wasmbin.OpcodeBr:
			copy(live, a.labelLive(in.imm))
		case wasmbin.OpcodeBrIf:
			or(live, a.labelLive(in.imm))
		case wasmbin.OpcodeBrTable:
			clear(live)
			for _, t := range a.targets[in.tbl : in.tbl+in.n] {
				or(live, a.labelLive(t))
			}
		case wasmbin.OpcodeUnreachable, wasmbin.OpcodeReturn, wasmbin.OpcodeReturnCall, wasmbin.OpcodeReturnCallIndirect,
			wasmbin.OpcodeReturnCallRef:
			clear(live)
		case wasmbin.OpcodeLocalGet:
			live[in.imm/64] |= 1 << (in.imm % 64)
		case wasmbin.OpcodeLocalSet, wasmbin.OpcodeLocalTee:
			live[in.imm/64] &^= 1 << (in.imm % 64)
		}
		a.liveIn[i] = popcount(live)
	}
	return true
}

// labelLive is the live set at branch target t: a loop's header (as far as
// its fixed point has got), another structure's end; none for the
// function (its results are no locals).
func (a *frameAnalysis) labelLive(t int32) []uint64 {
	if l, ok := a.label[t]; ok {
		return l
	}
	return make([]uint64, a.words)
}

func clone(s []uint64) []uint64 { return append([]uint64(nil), s...) }

func or(d, s []uint64) {
	for i := range d {
		d[i] |= s[i]
	}
}

func subset(a, b []uint64) bool {
	for i := range a {
		if a[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}

func popcount(s []uint64) uint32 {
	n := 0
	for _, x := range s {
		n += bits.OnesCount64(x)
	}
	return uint32(n)
}
