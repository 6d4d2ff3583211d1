//go:build wasmtime

package interrupt

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

// bulkWasmtime runs the bulk cases (bulk_test.go) on wasmtime.
type bulkWasmtime struct {
	engine *wasmtime.Engine
	module *wasmtime.Module
}

func newBulkWasmtime(t *testing.T, engine *wasmtime.Engine, wasm []byte) *bulkWasmtime {
	t.Helper()
	m, err := wasmtime.NewModule(engine, wasm)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return &bulkWasmtime{engine, m}
}

// run runs c's calls on a fresh instance; flag: the interrupt flag is set
// before the last call (FlagMemory outputs only). The error is the trap
// code of the last call's trap.
func (b *bulkWasmtime) run(t *testing.T, c bulkCase, flag bool) bulkResult {
	t.Helper()
	store := wasmtime.NewStore(b.engine)
	defer store.Close()
	inst, err := wasmtime.NewInstance(store, b.module, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := inst.GetExport(store, "memory").Memory()
	copy(mem.UnsafeData(store), bulkPattern)
	var res bulkResult
	for i, call := range c.calls {
		if flag && i == len(c.calls)-1 {
			flagMemory(t, store, inst).UnsafeData(store)[0] = 1
		}
		var args []any
		if call.op != "drop" {
			args = []any{int32(call.d), int32(call.s), int32(call.n)}
		}
		_, err := inst.GetFunc(store, call.op).Call(store, args...)
		res.err = ""
		if err != nil {
			var trap *wasmtime.Trap
			if !errors.As(err, &trap) || trap.Code() == nil {
				t.Fatalf("%s: not a trap: %v", c.name, err)
			}
			res.err = fmt.Sprintf("trap %d", *trap.Code())
		}
	}
	res.mem = bytes.Clone(mem.UnsafeData(store))
	return res
}

// TestWasmtimeBulkSplitSameResults: every bulk case leaves the memory and
// the trap as the original module does, instrumented with FlagMemory,
// with the instructions on memory 0 (the flag is memory 1) and on memory 1
// (the flag is memory 2; and copies from memory 0 to memory 1); and with
// the flag set before the call, an instruction longer than bulkChunk traps
// at the check before its first piece, having written nothing.
func TestWasmtimeBulkSplitSameResults(t *testing.T) {
	engine := wasmtime.NewEngine()
	defer engine.Close()
	for _, m := range []byte{0, 1} {
		t.Run(fmt.Sprintf("memory %d", m), func(t *testing.T) {
			wasm := bulkModuleOn(m)
			out, err := InstrumentWith(wasm, FlagMemory)
			if err != nil {
				t.Fatal(err)
			}
			checkMemoryOutput(t, wasm, out)
			cases := bulkCases()
			helpers := 3
			if m == 1 {
				cases = append(cases, copyxCases()...)
				helpers = 4
			}
			if n := helperCount(t, wasm, out); n != helpers {
				t.Fatalf("%d helpers, want %d", n, helpers)
			}
			orig, inst := newBulkWasmtime(t, engine, wasm), newBulkWasmtime(t, engine, out)
			unreachable := fmt.Sprintf("trap %d", wasmtime.UnreachableCodeReached)
			for _, c := range cases {
				want := orig.run(t, c, false)
				compareBulk(t, c, inst.run(t, c, false), want)
				if !c.big() || want.err != "" {
					continue
				}
				if got := inst.run(t, c, true); got.err != unreachable {
					t.Errorf("%s: with the flag set, ended with %q, want the unreachable trap", c.name, got.err)
				} else if len(c.calls) == 1 && !bytes.Equal(got.mem, bulkPattern) {
					t.Errorf("%s: with the flag set, it wrote before it trapped", c.name)
				}
			}
			t.Logf("%d cases", len(cases))
		})
	}
}
