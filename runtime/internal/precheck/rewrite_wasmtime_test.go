//go:build wasmtime

package precheck

import (
	"testing"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

// TestTableGrowBoundedWasmtime: as TestTableGrowBoundedWazero, on
// wasmtime.
func TestTableGrowBoundedWasmtime(t *testing.T) {
	grow := func(wasm []byte, n int32) int32 {
		eng := wasmtime.NewEngine()
		defer eng.Close()
		store := wasmtime.NewStore(eng)
		defer store.Close()
		mod, err := wasmtime.NewModule(eng, wasm)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := wasmtime.NewInstance(store, mod, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := inst.GetFunc(store, "grow").Call(store, n)
		if err != nil {
			t.Fatal(err)
		}
		return r.(int32)
	}
	in := growModule()
	max := int32(DefaultLimits.MaxTableEntries)
	if got := grow(in, max); got != 1 {
		t.Fatalf("unbounded table.grow by %d: %d, want 1", max, got)
	}
	out, err := Check(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := grow(out, max); got != -1 {
		t.Errorf("table.grow past MaxTableEntries: %d, want -1", got)
	}
	if got := grow(out, max-1); got != 1 {
		t.Errorf("table.grow to MaxTableEntries: %d, want 1", got)
	}
}
