package interrupt

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// exitForms is a module whose functions leave, after a call, in every
// way a function can: return from nested blocks, br_if and br_table to
// the function's label, the final end, a loop's exit, and (not wrapped) a
// function with two results. run(n) calls each and sums what they return.
func exitForms() []byte {
	types := [][]byte{
		{0x60, 1, 0x7f, 1, 0x7f},       // 0: (i32) -> (i32)
		{0x60, 1, 0x7f, 2, 0x7f, 0x7f}, // 1: (i32) -> (i32 i32)
		{0x60, 0, 0},                   // 2: () -> ()
	}
	leaf := cat(localGet(0), i32c(3), []byte{0x6c}) // n * 3
	funcs := []wfunc{
		// 0 run(n): the sum of 1..5 (n) and both results of 6 (n).
		{0, []byte{0}, cat(localGet(0), call(1), localGet(0), call(2), []byte{0x6a}, localGet(0), call(3), []byte{0x6a},
			localGet(0), call(4), []byte{0x6a}, localGet(0), call(5), []byte{0x6a}, localGet(0), call(6), []byte{0x6a, 0x6a})},
		// 1: return from two blocks deep, after a call.
		{0, []byte{0}, cat(opBlock, opBlock, localGet(0), call(7), []byte{0x0f}, opEnd, opEnd, i32c(-1))},
		// 2: br_if to the function's label after a call (taken when n
		// is odd), else the final end.
		{0, []byte{0}, cat(localGet(0), call(7), localGet(0), i32c(1), []byte{0x71}, brIf(0), i32c(1), []byte{0x6a})},
		// 3: br_table to the function's label or a block, after a call.
		{0, []byte{0}, cat([]byte{0x02, 0x7f}, localGet(0), call(7), localGet(0), i32c(1), []byte{0x71}, []byte{0x0e, 1, 0, 1}, opEnd, i32c(5), []byte{0x6a})},
		// 4: a loop calling, left by br_if, then return.
		{0, []byte{1, 1, 0x7f}, cat(opLoop, localGet(1), localGet(0), call(7), []byte{0x6a}, localSet(1),
			localGet(0), i32c(1), opSub32, localSet(0), localGet(0), i32c(0), []byte{0x4a}, brIf(0), opEnd, localGet(1), []byte{0x0f})},
		// 5: a leaf with two returns (no call: no check needed at its exits).
		{0, []byte{0}, cat(localGet(0), opIf, localGet(0), []byte{0x0f}, opEnd, i32c(9))},
		// 6: two results, returned after a call (not wrapped: a check before the return).
		{1, []byte{0}, cat(localGet(0), call(7), localGet(0), []byte{0x0f})},
		// 7: the leaf.
		{0, []byte{0}, leaf},
	}
	ts := u(uint64(len(types)))
	for _, t := range types {
		ts = append(ts, t...)
	}
	fs := u(uint64(len(funcs)))
	code := u(uint64(len(funcs)))
	for _, f := range funcs {
		fs = append(fs, u(uint64(f.typ))...)
		body := cat(f.locals, f.code, opEnd)
		code = append(append(code, u(uint64(len(body)))...), body...)
	}
	return mod(sec(1, ts...), sec(3, fs...), sec(7, 1, 3, 'r', 'u', 'n', 0x00, 0), sec(10, code...))
}

// exceptions is a module that throws and catches in a loop, with try_table
// (catch_all to a block): run(n) counts n catches. (wazero has no legacy
// try/catch, which the placement handles too.)
func exceptions() []byte {
	types := []byte{2, 0x60, 0, 0, 0x60, 1, 0x7f, 1, 0x7f}
	body := cat(
		opBlock, opLoop,
		localGet(0), opEqz32, brIf(1),
		localGet(0), i32c(1), opSub32, localSet(0),
		opBlock, []byte{0x1f, 0x40, 1, 0x02, 0}, []byte{0x08, 0}, opEnd, opEnd, // block (try_table (catch_all 0) (throw 0)) end
		localGet(1), i32c(1), []byte{0x6a}, localSet(1),
		br(0), opEnd, opEnd,
		localGet(1))
	fn := cat([]byte{1, 1, 0x7f}, body, opEnd)
	return mod(sec(1, types...), sec(3, 1, 1), sec(13, 1, 0, 0), sec(7, 1, 3, 'r', 'u', 'n', 0x00, 0),
		sec(10, cat([]byte{1}, u(uint64(len(fn))), fn)...))
}

// TestPlacementSameResults: the exit forms and the exception handlers
// compute the same instrumented (FlagBudget, FlagMemory) as they are, and
// run at most maxRegion instructions between two checks.
func TestPlacementSameResults(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		wasm     []byte
		features api.CoreFeatures
	}{
		"exit forms": {exitForms(), api.CoreFeaturesV2},
		"exceptions": {exceptions(), api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling},
	} {
		t.Run(name, func(t *testing.T) {
			budget, err := InstrumentWith(c.wasm, FlagBudget)
			if err != nil {
				t.Fatal(err)
			}
			memory, err := InstrumentWith(c.wasm, FlagMemory)
			if err != nil {
				t.Fatal(err)
			}
			checkBudgetOutput(t, c.wasm, budget)
			checkMemoryOutput(t, c.wasm, memory)
			f := facts(t, c.wasm)
			one, _, err := instrument(c.wasm, FlagBudget, 1)
			if err != nil {
				t.Fatal(err)
			}
			counted := countInstructions(t, one, f.imported.globals+f.definedGlobals)
			var want []uint64
			for _, v := range []struct {
				name string
				wasm []byte
			}{{"original", c.wasm}, {"FlagBudget", budget}, {"FlagMemory", memory}, {"counted", counted}} {
				r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(c.features))
				defer r.Close(ctx)
				var last, most int64
				_, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, _ []uint64) {
					if g := m.ExportedGlobal(countGlobalName); g != nil {
						n := int64(g.Get())
						most, last = max(most, n-last), n
					}
				}), nil, nil).Export(YieldName).Instantiate(ctx)
				if err != nil {
					t.Fatal(err)
				}
				m, err := r.Instantiate(ctx, v.wasm)
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				for _, n := range []uint64{0, 1, 4, 7} {
					got, err := m.ExportedFunction("run").Call(ctx, n)
					if err != nil {
						t.Fatalf("%s: run(%d): %v", v.name, n, err)
					}
					if v.name == "original" {
						want = append(want, got[0])
					} else if got[0] != want[slices.Index([]uint64{0, 1, 4, 7}, n)] {
						t.Fatalf("%s: run(%d) = %d, want %d", v.name, n, got[0], want[slices.Index([]uint64{0, 1, 4, 7}, n)])
					}
				}
				if most > maxRegion {
					t.Errorf("%d instructions between two checks", most)
				}
			}
			if _, err := exec.LookPath("wasm-validate"); err == nil && name == "exit forms" {
				wabtValidate(t, budget)
			}
		})
	}
}
