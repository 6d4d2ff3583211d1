package interrupt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

func fixtures(tb testing.TB) map[string][]byte {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "malicious", "*.wasm"))
	if len(paths) == 0 {
		tb.Fatal("no fixtures")
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestInterruptStopsLoop instruments the infinite-loop fixture, runs it and
// stops it from another goroutine by setting the flag.
func TestInterruptStopsLoop(t *testing.T) {
	ctx := context.Background()
	wasm, err := Instrument(fixtures(t)["loop.wasm"])
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	host := r.NewHostModuleBuilder("wasmprov_v1")
	host.NewFunctionBuilder().WithFunc(func(int32, int32) int32 { return 0 }).Export("output")
	host.NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32, int64) int32 { return 0 }).Export("set_error")
	if _, err := host.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	flag := mod.ExportedGlobal(GlobalName).(api.MutableGlobal)
	// Before the flag is set, the guest runs normally.
	if res, err := mod.ExportedFunction("wasmprov_validate").Call(ctx); err != nil || res[0] != 0 {
		t.Fatal(res, err)
	}
	time.AfterFunc(50*time.Millisecond, func() { flag.Set(1) })
	start := time.Now()
	_, err = mod.ExportedFunction("wasmprov_get").Call(ctx)
	if err == nil {
		t.Fatal("the loop returned")
	}
	t.Logf("stopped after %v: %v", time.Since(start), err)
}

// TestInstrumentFixtures: every fixture that compiles still compiles once
// instrumented, and exports the flag.
func TestInstrumentFixtures(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	for name, b := range fixtures(t) {
		if _, err := r.CompileModule(ctx, b); err != nil {
			continue
		}
		out, err := Instrument(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		cm, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Errorf("%s: the instrumented module does not compile: %v", name, err)
			continue
		}
		if len(cm.ExportedFunctions()) == 0 && name != "missingexports.wasm" {
			t.Errorf("%s: lost its exports", name)
		}
	}
}

// TestInstrumentRefusesFlagAccess: a module that names the global index the
// flag would get is refused, not instrumented into resetting the flag.
func TestInstrumentRefusesFlagAccess(t *testing.T) {
	// (module (func (global.set 0 (i32.const 0)))) — invalid as it stands
	// (no global 0), valid after a naive rewrite.
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type: () -> ()
		3, 2, 1, 0, // func 0: type 0
		10, 8, 1, 6, 0, 0x41, 0, 0x24, 0, 0x0b, // code: i32.const 0; global.set 0; end
	}
	if _, err := Instrument(wasm); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
	if _, err := Instrument([]byte("\x00asm\x01\x00\x00\x00\x0a\x05\x01\x03\x00\xff\x0b")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unknown opcode: want ErrUnsupported, got %v", err)
	}
}

// FuzzInstrument: Instrument never panics, and whatever wazero accepts
// stays acceptable after instrumentation (or is refused with an error).
func FuzzInstrument(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	f.Cleanup(func() { r.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm)
		if err != nil {
			return
		}
		orig, err := r.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		defer orig.Close(ctx)
		cm, err := r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("valid module invalid after instrumentation: %v", err)
		}
		cm.Close(ctx)
	})
}
