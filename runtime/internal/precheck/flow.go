package precheck

import (
	"sync"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The locals work of a function (Limits.MaxLocalsWork) comes from the
// blocks wazero's compiler (v1.12.0, its SSA construction after Braun et
// al.) makes of the function, which flowModel follows as it reads the
// instructions:
//
//   - A read of a local (local.get) walks back from the current block
//     through the chain of blocks that have one predecessor (the
//     continuation of a br_if, the arms of an if, the end of a block no
//     branch leaves) to a block that defines the local or has several
//     predecessors, or to a loop header still open; nothing remembers the
//     walk, so every read pays it: reads × chain.
//   - A block with several predecessors (the end of a block a branch
//     leaves, of an if, a loop header when its loop ends) is resolved once
//     per local read after it, by a walk back from each predecessor: locals
//     × the chains of its predecessors. A second walk in the same block
//     sees the first's placeholder and disagrees, so such a block gets a
//     parameter for every local read after it (and the walks go on to the
//     joins before it).
//   - Its pass that removes redundant parameters reads, for each
//     parameter of a block and each predecessor, all the arguments the
//     predecessor passes: parameters² × predecessors, for every block.
//
// So the work is values² × preds + values × walks + reads, where values
// is the function's locals plus the most values a block of it takes or
// leaves and two the compiler keeps as locals of its own, preds the
// predecessors of its blocks with more than one (and of every block with
// parameters), walks the chains (plus one) of those predecessors, and
// reads the chains of its local.get instructions.
type flowModel struct {
	frames []flowFrame
	pooled *[]flowFrame // where frames came from
	chain  uint64       // the current block's chain of one-predecessor blocks
	live   bool         // the current instruction is reachable
	preds  uint64
	walks  uint64
	reads  uint64
}

// flowFrame is an open control structure.
type flowFrame struct {
	kind byte // an opcode: block, loop, if, try, try_table; 0 for the function
	dead bool // opened in unreachable code: wazero makes no blocks for it
	// live0 and chain0: reachable, and the chain, where an if or try
	// began (its other arms start there, one block further).
	live0  bool
	elsed  bool
	chain0 uint64
	// edges into the structure's join (its end, or a loop's header), the
	// longest of their chains (plus one) and their sum.
	edges, edgeMax, edgeSum uint64
}

// framesPool keeps the frame stacks (at most MaxNesting frames), so a
// Check allocates none once warm.
var framesPool = sync.Pool{New: func() any { s := make([]flowFrame, 0, 1024); return &s }}

// acquire takes a frame stack from the pool, release gives it back.
func (f *flowModel) acquire() {
	f.pooled = framesPool.Get().(*[]flowFrame)
	f.frames = (*f.pooled)[:0]
}

func (f *flowModel) release() {
	*f.pooled = f.frames[:0]
	framesPool.Put(f.pooled)
	*f = flowModel{}
}

// reset starts a function body.
func (f *flowModel) reset() {
	f.frames = append(f.frames[:0], flowFrame{})
	f.chain, f.live, f.preds, f.walks, f.reads = 0, true, 0, 0, 0
}

// edge records an edge from the current block, with chain chain, into the
// join of the structure label levels out (none for the function's: its
// return block reads no local).
func (f *flowModel) edge(label uint32, chain uint64) {
	if uint64(label) >= uint64(len(f.frames)-1) {
		return // the function's own label, or invalid (the engines refuse it)
	}
	fr := &f.frames[len(f.frames)-1-int(label)]
	fr.edges++
	fr.edgeSum += chain + 1
	fr.edgeMax = max(fr.edgeMax, chain+1)
}

// join ends the structure fr, whose join has its edges: a block of one
// predecessor extends that edge's chain; one of several starts a new one,
// after walks from each.
func (f *flowModel) join(fr *flowFrame) {
	switch {
	case fr.edges == 0:
		f.live = false
	case fr.edges == 1:
		f.live, f.chain = true, fr.edgeMax
		f.preds++ // a block with parameters (block results) pays for them
	default:
		f.live, f.chain = true, 0
		f.preds += fr.edges
		f.walks += fr.edgeSum
	}
}

// step follows one instruction.
func (f *flowModel) step(in *wasmbin.Instruction) {
	switch in.Opcode {
	case wasmbin.OpcodeLocalGet:
		if f.live {
			f.reads += f.chain
		}
	case wasmbin.OpcodeBlock, wasmbin.OpcodeTry, wasmbin.OpcodeTryTable:
		f.frames = append(f.frames, flowFrame{kind: byte(in.Opcode), dead: !f.live, live0: f.live, chain0: f.chain})
		if in.Opcode == wasmbin.OpcodeTryTable && f.live {
			in.Catches(func(c wasmbin.Catch) bool {
				f.edge(c.Label+1, f.chain+1) // from a landing block; the labels are outside the try_table
				return true
			})
		}
	case wasmbin.OpcodeLoop:
		fr := flowFrame{kind: byte(in.Opcode), dead: !f.live}
		if f.live {
			fr.edges, fr.edgeSum, fr.edgeMax = 1, f.chain+1, f.chain+1
		}
		f.frames = append(f.frames, fr)
		f.chain = 0 // the header is open: a walk stops there
	case wasmbin.OpcodeIf:
		f.frames = append(f.frames, flowFrame{kind: byte(in.Opcode), dead: !f.live, live0: f.live, chain0: f.chain})
		if f.live {
			f.chain++
		}
	case wasmbin.OpcodeElse, wasmbin.OpcodeCatch, wasmbin.OpcodeCatchAll:
		fr := &f.frames[len(f.frames)-1]
		if fr.dead {
			return
		}
		if f.live {
			f.edge(0, f.chain)
		}
		fr.elsed = true
		f.live, f.chain = fr.live0, fr.chain0+1
	case wasmbin.OpcodeEnd, wasmbin.OpcodeDelegate:
		if len(f.frames) <= 1 {
			return // the body's end
		}
		if f.live {
			if f.frames[len(f.frames)-1].kind == byte(wasmbin.OpcodeLoop) {
				f.chain++ // the loop's continuation: one predecessor
			} else {
				f.edge(0, f.chain)
			}
		}
		fr := f.frames[len(f.frames)-1]
		f.frames = f.frames[:len(f.frames)-1]
		switch {
		case fr.dead:
			f.live = false
		case fr.kind == byte(wasmbin.OpcodeLoop):
			// The header is sealed: a walk from each of its predecessors
			// for every local read in the loop.
			f.preds += fr.edges
			f.walks += fr.edgeSum
		default:
			if fr.kind == byte(wasmbin.OpcodeIf) && !fr.elsed && fr.live0 {
				fr.edges++ // the empty else arm
				fr.edgeSum += fr.chain0 + 2
				fr.edgeMax = max(fr.edgeMax, fr.chain0+2)
			}
			f.join(&fr)
		}
	case wasmbin.OpcodeBr:
		if f.live {
			f.edge(in.Index, f.chain)
		}
		f.live = false
	case wasmbin.OpcodeBrIf, wasmbin.OpcodeBrOnNull, wasmbin.OpcodeBrOnNonNull:
		if f.live {
			f.edge(in.Index, f.chain)
			f.chain++ // the continuation: one predecessor
		}
	case wasmbin.OpcodeBrTable:
		if f.live {
			// Each target through a block of its own.
			in.Targets(func(l uint32) bool {
				f.edge(l, f.chain+1)
				return true
			})
			f.edge(in.Index, f.chain+1)
		}
		f.live = false
	case wasmbin.OpcodeReturn, wasmbin.OpcodeUnreachable, wasmbin.OpcodeThrow, wasmbin.OpcodeThrowRef,
		wasmbin.OpcodeRethrow, wasmbin.OpcodeReturnCall, wasmbin.OpcodeReturnCallIndirect, wasmbin.OpcodeReturnCallRef:
		f.live = false
	}
}
