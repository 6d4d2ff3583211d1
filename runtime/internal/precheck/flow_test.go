package precheck

import (
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// TestFlowModel: the predecessors, walks and read walks flowModel counts
// for small bodies, worked out by hand from how wazero lowers them (see
// flow.go).
func TestFlowModel(t *testing.T) {
	ifEnd := cat(opLocalGet(0), []byte{0x04, 0x40}, opEnd)
	brIf0 := cat(opLocalGet(0), opBrIf(0))
	drop := []byte{0x1a}
	for _, c := range []struct {
		name                string
		expr                []byte // without the body's end
		preds, walks, reads uint64
	}{
		// Each if joins its two arms, both one block from the if's:
		// 2 predecessors, walks 2 + 2; the chain starts again after.
		{"three empty ifs", cat(repeat(ifEnd, 3), opLocalGet(1), drop), 6, 12, 0},
		// The header: the entry edge (1) and three back edges from the
		// chain of br_if continuations (1, 2, 3); the reads walk 0, 1, 2,
		// and the last, after the loop's continuation, 4.
		{"a loop of three br_if", cat(opLoop, repeat(brIf0, 3), opEnd), 4, 7, 7},
		// Two br_if and the fallthrough out of a block: chains 1, 2, 3.
		{"a block of two br_if", cat(opBlock, repeat(brIf0, 2), opEnd), 3, 6, 1},
		// One branch out, no fallthrough: one predecessor, no walk; the
		// last read walks back to the block's start.
		{"a block left by br", cat(opBlock, []byte{0x0c, 0x00}, opEnd), 1, 0, 1},
		// The arms of an if/else both read a local one block from the if.
		{"if else", cat(opLocalGet(0), []byte{0x04, 0x40}, opLocalGet(0), drop, []byte{0x05}, opLocalGet(0), drop, opEnd), 2, 4, 2},
		// br_table 0 1, default 0, through a block of its own per target: the inner block
		// gets two edges (chain 2 each), the outer one from the br_table
		// (2) and the inner's fallthrough (1).
		{"br_table", cat(opBlock, opBlock, opLocalGet(0), []byte{0x0e, 0x02, 0x00, 0x01, 0x00}, opEnd, opEnd), 4, 7, 0},
		// Unreachable code makes no blocks.
		{"dead code", cat([]byte{0x00}, opBlock, brIf0, opEnd, ifEnd), 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f flowModel
			f.acquire()
			defer f.release()
			f.reset()
			w := wasmbin.NewWalker(cat(c.expr, opLocalGet(0), opEnd), 0)
			var in wasmbin.Instruction
			for {
				ok, err := w.Next(&in)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				f.step(&in)
			}
			if f.preds != c.preds || f.walks != c.walks || f.reads != c.reads {
				t.Errorf("preds %d, walks %d, reads %d; want %d, %d, %d", f.preds, f.walks, f.reads, c.preds, c.walks, c.reads)
			}
		})
	}
}
