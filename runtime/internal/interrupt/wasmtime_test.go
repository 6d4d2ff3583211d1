//go:build wasmtime

package interrupt

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

// wasmtimeLoopModules: a function that loops forever and one that returns,
// with the guest's own memory (the flag is memory 1, read with an explicit
// memory index) and without (the flag is memory 0).
var wasmtimeLoopModules = map[string]string{
	"own memory": `(module
		(memory (export "memory") 1)
		(func (export "spin") (loop $l (br $l)))
		(func (export "ok") (result i32)
			(i32.store (i32.const 0) (i32.const 7))
			(i32.load (i32.const 0))))`,
	"no memory": `(module
		(func (export "spin") (loop $l (br $l)))
		(func (export "ok") (result i32) (i32.const 7)))`,
}

// wasmtimeInstance instantiates wat instrumented in FlagMemory mode in a new
// store, which the caller closes (never while a call runs in it: wasmtime
// would unmap the memories under the running code).
func wasmtimeInstance(t *testing.T, wat string) (*wasmtime.Store, *wasmtime.Instance) {
	t.Helper()
	wasm, err := wasmtime.Wat2Wasm(wat)
	if err != nil {
		t.Fatal(err)
	}
	out, err := InstrumentWith(wasm, FlagMemory)
	if err != nil {
		t.Fatal(err)
	}
	engine := wasmtime.NewEngine() // multi-memory is on by default
	module, err := wasmtime.NewModule(engine, out)
	if err != nil {
		t.Fatal(err)
	}
	store := wasmtime.NewStore(engine)
	inst, err := wasmtime.NewInstance(store, module, nil)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return store, inst
}

// flagMemory returns the exported flag memory, checking it is 1..1 pages.
func flagMemory(t *testing.T, store *wasmtime.Store, inst *wasmtime.Instance) *wasmtime.Memory {
	t.Helper()
	ext := inst.GetExport(store, MemoryName)
	if ext == nil || ext.Memory() == nil {
		t.Fatalf("no memory %s exported", MemoryName)
	}
	mem := ext.Memory()
	ty := mem.Type(store)
	if ok, max := ty.Maximum(); ty.Minimum() != 1 || !ok || max != 1 || mem.Size(store) != 1 {
		t.Fatalf("%s: min %d max %v %d size %d, want 1..1", MemoryName, ty.Minimum(), ok, max, mem.Size(store))
	}
	return mem
}

// TestWasmtimeMemoryFlagStopsLoop calls an infinite loop on one goroutine
// and stops it from another by writing 1 into word 0 of the flag memory:
// the call must return the unreachable trap within a second.
func TestWasmtimeMemoryFlagStopsLoop(t *testing.T) {
	for name, wat := range wasmtimeLoopModules {
		t.Run(name, func(t *testing.T) {
			store, inst := wasmtimeInstance(t, wat)
			running := false // the loop may still run: leak the store
			defer func() {
				if !running {
					store.Close()
				}
			}()
			mem := flagMemory(t, store, inst)
			spin := inst.GetFunc(store, "spin")
			flags := make(chan *uint32)
			done := make(chan error, 1)
			running = true
			go func() {
				// The calling goroutine takes the flag's address before
				// the call: the store is not used concurrently.
				flags <- (*uint32)(mem.Data(store))
				_, err := spin.Call(store)
				done <- err
			}()
			flag := <-flags
			time.Sleep(50 * time.Millisecond) // let the loop start
			select {
			case err := <-done:
				running = false
				t.Fatalf("the loop returned before the flag was set: %v", err)
			default:
			}
			atomic.StoreUint32(flag, 1)
			set := time.Now()
			select {
			case err := <-done:
				running = false
				var trap *wasmtime.Trap
				if !errors.As(err, &trap) {
					t.Fatalf("want a trap, got %v", err)
				}
				if code := trap.Code(); code == nil || *code != wasmtime.UnreachableCodeReached {
					t.Fatalf("want the unreachable trap, got %v", err)
				}
				t.Logf("stopped %v after the flag was set", time.Since(set))
			case <-time.After(time.Second):
				t.Fatal("the loop did not stop within a second of the flag being set")
			}
		})
	}
}

// TestWasmtimeMemoryFlagZeroRuns: with the flag 0, instrumented functions
// run normally (the guest's own memory included); with it set, every call
// traps at its entry.
func TestWasmtimeMemoryFlagZeroRuns(t *testing.T) {
	for name, wat := range wasmtimeLoopModules {
		t.Run(name, func(t *testing.T) {
			store, inst := wasmtimeInstance(t, wat)
			defer store.Close()
			mem := flagMemory(t, store, inst)
			ok := inst.GetFunc(store, "ok")
			for range 3 {
				res, err := ok.Call(store)
				if err != nil || res != int32(7) {
					t.Fatalf("got %v, %v; want 7", res, err)
				}
			}
			atomic.StoreUint32((*uint32)(mem.Data(store)), 1)
			if _, err := ok.Call(store); err == nil {
				t.Fatal("a call with the flag set returned")
			}
			atomic.StoreUint32((*uint32)(mem.Data(store)), 0)
			if res, err := ok.Call(store); err != nil || res != int32(7) {
				t.Fatalf("after clearing the flag: got %v, %v; want 7", res, err)
			}
		})
	}
}

// TestWasmtimeFixtures: every fixture wasmtime validates still validates
// in wasmtime once instrumented in FlagMemory mode.
func TestWasmtimeFixtures(t *testing.T) {
	engine := wasmtime.NewEngine()
	n := 0
	for name, b := range fixtures(t) {
		if wasmtime.ModuleValidate(engine, b) != nil {
			continue
		}
		out, err := InstrumentWith(b, FlagMemory)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := wasmtime.ModuleValidate(engine, out); err != nil {
			t.Errorf("%s: the instrumented module does not validate: %v", name, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no fixture validates")
	}
	t.Logf("%d fixtures", n)
}

// TestWasmtimeShapesInterrupt: every hostile shape (shapes_test.go), in
// wasmtime with FlagMemory, stops within stopLimit of the flag being set,
// a second into its spin; and computes what it computes uninstrumented.
// (A wasmtime call is a cgo call, which a Go collection does not wait for:
// only the interrupt's latency is at stake.)
func TestWasmtimeShapesInterrupt(t *testing.T) {
	// wasmtime's stack holds ~10^4 frames; Cranelift takes ~40 s over the
	// million-instruction function, so a tenth of it (still far beyond
	// maxRegion).
	names, all := sortedShapes(200, 10)
	engine := wasmtime.NewEngine()
	defer engine.Close()
	for _, name := range names {
		m := all[name]
		t.Run(name, func(t *testing.T) {
			wasm := m.bytes()
			out, err := InstrumentWith(wasm, FlagMemory)
			if err != nil {
				t.Fatal(err)
			}
			// The same results, with the flag clear.
			var want []int64
			for _, b := range [][]byte{wasm, out} {
				mod, err := wasmtime.NewModule(engine, b)
				if err != nil {
					t.Fatal(err)
				}
				store := wasmtime.NewStore(engine)
				inst, err := wasmtime.NewInstance(store, mod, nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := inst.GetFunc(store, "run").Call(store, int32(m.rounds))
				store.Close()
				mod.Close()
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, res.(int64))
			}
			if want[0] != want[1] {
				t.Fatalf("run(%d) = %d instrumented, %d as it is", m.rounds, want[1], want[0])
			}

			mod, err := wasmtime.NewModule(engine, out)
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close()
			store := wasmtime.NewStore(engine)
			inst, err := wasmtime.NewInstance(store, mod, nil)
			if err != nil {
				store.Close()
				t.Fatal(err)
			}
			mem := flagMemory(t, store, inst)
			spin := inst.GetFunc(store, "spin")
			flags := make(chan *uint32)
			done := make(chan error, 1)
			go func() {
				flags <- (*uint32)(mem.Data(store))
				_, err := spin.Call(store)
				done <- err
			}()
			flag := <-flags
			time.Sleep(time.Second)
			select {
			case err := <-done:
				t.Fatalf("the spin returned before the flag was set: %v", err)
			default:
			}
			atomic.StoreUint32(flag, 1)
			set := time.Now()
			select {
			case err := <-done:
				stopped := time.Since(set)
				store.Close()
				var trap *wasmtime.Trap
				if !errors.As(err, &trap) {
					t.Fatalf("want a trap, got %v", err)
				}
				t.Logf("stopped %v after the flag", stopped)
				if stopped > stopLimit {
					t.Errorf("stopped %v after the flag, want within %v", stopped, stopLimit)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the spin did not stop within 10s of the flag (its store is leaked)")
			}
		})
	}
}
