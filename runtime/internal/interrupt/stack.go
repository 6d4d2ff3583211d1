package interrupt

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The stack bound (FlagBudget).
//
// wazero gives each call of an exported function a call stack of its own, a
// Go []byte that doubles whenever a frame does not fit, up to about 80 MB
// (internal/engine/wazevo's callStackCeiling): a recursion without bound
// makes the host allocate some 170 MiB per instance before wazero's stack
// overflow trap, outside the linear-memory limit. FlagBudget bounds it: a
// mutable i32 global the guest cannot name (its index is beyond the
// module's own), exported to the host as StackName, starts at StackLimit
// and holds the bytes of stack the guest may still take. Every function
// that makes a call (call, call_indirect, call_ref, or a tail call that
// wazero makes as a plain call, below) takes its frame's estimate
// (frameEstimate) from it at its entry, and gives it back on every way out:
// the final end, return and branches to the function's label (which all
// reach one point, after a block around the body: see wrap in place.go),
// and before a return_call*. The first check on every path from its entry
// (place.go), which every path to a call passes, also traps (unreachable)
// when the counter is below 0. A frame is only ever pushed by a call, so
// wazero's stack holds at most StackLimit bytes of estimated frames of
// functions that call, plus one frame: that of the function whose check
// trapped, or of a function that calls nothing (whose frame, however big,
// pushes nothing above it).
//
// Tail calls: a return_call, return_call_indirect or return_call_ref gives
// the frame back before it jumps, and the callee takes its own. But wazero
// makes a tail call whose parameters or results do not all fit in registers
// a plain call followed by a return (its RATIONALE.md), so the caller's frame
// stays: the rewrite makes it exactly that, call then return, counted like
// any call (regsOnly). Inside a try block, where a plain call's exceptions
// would be caught and a tail call's not, such a tail call is refused.
//
// The call of a bulk helper (bulk.go) is not counted: a helper calls
// nothing but the yield, as a check does, and its frame (about 300 bytes)
// is pushed once above its caller's, counted or not.
//
// A call that does not return normally (a trap, this check's included; a
// stop: the host panics out of the yield function; a host function's
// panic) leaves the counter lower than the stack is: the host discards the
// instance after such a call, as it does for the budget, so a stale counter
// never matters.
//
// Exceptions (try_table, and the legacy try ... catch) unwind frames
// without giving their share back. A counted function with a handler keeps
// the counter's value after its own entry in a local of its own; each
// landing of a handler (the end of the block a catch clause names, the
// header of a loop it names, a legacy catch) sets the counter back to it,
// and its exits give back from it. Exact: below a function's frame, while
// its code runs, the counter is always that value.
//
// The counter is the global's value minus nothing else: after a normal
// return to the host it is StackLimit again, so an instance serves any
// number of calls.
//
// The estimate is of wazero's optimizing compiler's frames (amd64, arm64):
// a return address and frame pointer, the callee-saved registers the
// function uses (at most 23 of 16 bytes on arm64), a spill slot of 8 bytes
// (16 for a v128) for every virtual register the register allocator ever
// spills (slots are not reused: a function of 10 locals reassigned between
// 1,000 calls has a 67 KB frame), and the outgoing arguments and results
// of its calls that do not fit in registers. Every value an instruction
// defines is a virtual register (local.get's is the local's), and so is
// every value of a local at a point where control flow merges (a loop
// header, the end of a block or if) that an instruction inside that
// structure assigns (60 locals assigned in 60 nested loops, with calls
// between the headers: 29 KB). frameEstimate counts 2 slots a parameter,
// one a declared local, one a value an instruction defines (a call: its
// results and 2, wazero's reloads of the memory's base and length), and at
// each merge min(parameters + locals, assignments inside) + the
// structure's arity + 2; and 16 bytes each of the parameters and results
// of its biggest call. It counts what might be spilled, not what is: for
// the Go guests, whose frames are small (80 bytes for most, 11 KB at most;
// wazero keeps few values across Go's calls), it is 4 to 900 times over
// (25 on average);
// for functions built to have big frames (many live locals, parameters or
// operands, values reassigned between calls, more values than registers,
// locals assigned in nested loops) 1.4 to 10 times (TestStackFrameEstimate
// measures it against the stack each function's prologue checks for).
// Over by 4 or more, a Go guest still fits: the Go test guest takes at most
// 420 KB of the 32 MiB, for 33 frames, and runs with a quarter of the bound;
// a simple recursive Go function gets 3,958 frames deep with 4 MiB, 15,885
// with 16 MiB.
const (
	// StackName is the export name of FlagBudget's stack counter: after a
	// call trapped, a negative value says it trapped for the stack bound.
	StackName = "wasmprov_stack"
	// StackLimit is the bytes of estimated frames (frameEstimate) a call
	// may hold on wazero's stack in FlagBudget mode. wazero's stack then
	// stays under 32 MiB and a frame (the estimates are over the frames
	// wazero compiles): a recursion bomb costs the process 5-43 MiB of
	// memory, against 98-181 MiB without the bound (the stack doubles as
	// it grows, copying itself; TestStackBoundMemory measures it). Why
	// not less: the estimates are 4 to 900 times a Go function's frame,
	// and the Hetzner provider built on hcloud-go needs 8 to 16 MiB of
	// them for its _initialize (its package initialisers); 32 MiB leaves
	// it twice that.
	StackLimit = 32 << 20
	// frameBase: what every frame takes beyond its spill slots and
	// outgoing arguments: return address, frame pointer, 23 callee-saved
	// registers of 16 bytes (arm64; amd64 has 13), the 16 bytes the
	// stack check keeps.
	frameBase = 16 + 23*16 + 16
)

// frameEstimate is the estimated frame in bytes of a function with params
// parameters, locals declared locals, n instructions and merges (the sum
// over its structures of their merge term) whose calls' outgoing arguments
// and results take args bytes at most, capped at limit + 1 (a frame over
// the limit traps on entry).
func frameEstimate(params, locals, n, merges, args uint64, v128 bool, limit int32) int32 {
	slot := uint64(8)
	if v128 {
		slot = 16
	}
	e := frameBase + args + slot*(2*params+locals+n+merges)
	if e > uint64(limit) {
		return limit + 1
	}
	return int32(e)
}

// regsOnly reports whether wazero passes every parameter and result of a
// function of type s in registers, on amd64 and on arm64 alike: 6 integer
// parameters (8 registers on arm64, 9 on amd64, less the two context
// pointers), 8 float ones, 8 integer and 8 float results. Only then is a
// tail call to it a jump.
func (s sig) regsOnly() bool {
	return s.ints[0] <= 6 && s.floats[0] <= 8 && s.ints[1] <= 8 && s.floats[1] <= 8
}

// wrapTypeSet: the types FlagBudget adds, after the yield's, for the block
// around the body of a function with several results ([] -> results), and
// the block type (the added type's index) for each type of the module
// with several results.
type wrapTypeSet struct {
	items [][]byte
	bt    map[int][]byte
}

// wrapTypes returns the wrap types for sigs, the first taking index first.
func wrapTypes(sigs []sig, first uint32) wrapTypeSet {
	ws := wrapTypeSet{bt: map[int][]byte{}}
	seen := map[string][]byte{}
	for i, s := range sigs {
		if s.results < 2 {
			continue
		}
		bt, ok := seen[string(s.res)]
		if !ok {
			bt = wasmbin.AppendInt64(nil, int64(first)+int64(len(ws.items)))
			item := wasmbin.AppendUint64([]byte{wasmbin.TypeFormFunc, 0}, uint64(s.results))
			ws.items = append(ws.items, append(item, s.res...))
			seen[string(s.res)] = bt
		}
		ws.bt[i] = bt
	}
	return ws
}

// appendStackEnter appends the entry of a counted function taking e bytes
// from counter global g (saved >= 0: and keeping the result in that
// local):
//
//	global.get g; i32.const e; i32.sub; global.set g    (local.tee saved; global.set g)
//
// The first check on every path from the entry tests the counter
// (appendCheck): every path to a call has one, since a function starts
// owing its caller callSlack (place.go). A test here, a branch of its own,
// cost a call of a small function 20% more (measured: a recursive fib).
func appendStackEnter(out []byte, g uint32, e int32, saved int64) []byte {
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), uint64(g))
	out = wasmbin.AppendInt64(append(out, wasmbin.OpcodeI32Const), int64(e))
	out = append(out, wasmbin.OpcodeI32Sub)
	if saved >= 0 {
		out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeLocalTee), uint64(saved))
	}
	return wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalSet), uint64(g))
}

// appendStackExit appends the exit of a counted function taking e bytes:
//
//	global.get g; i32.const e; i32.add; global.set g    (local.get saved first)
func appendStackExit(out []byte, g uint32, e int32, saved int64) []byte {
	if saved >= 0 {
		out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeLocalGet), uint64(saved))
	} else {
		out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalGet), uint64(g))
	}
	out = wasmbin.AppendInt64(append(out, wasmbin.OpcodeI32Const), int64(e))
	out = append(out, wasmbin.OpcodeI32Add)
	return wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalSet), uint64(g))
}

// appendResync appends a handler's landing: local.get saved; global.set g.
func appendResync(out []byte, g uint32, saved int64) []byte {
	out = wasmbin.AppendUint64(append(out, wasmbin.OpcodeLocalGet), uint64(saved))
	return wasmbin.AppendUint64(append(out, wasmbin.OpcodeGlobalSet), uint64(g))
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
// becomes the call then return it is in wazero (see above).
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
		// A split's inline test (bulk.go) defines as many values as a
		// check.
		if e.kind == editCheck || e.kind == editBulk || (e.kind == editWrapClose && e.flag) || e.kind == editSplit {
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
