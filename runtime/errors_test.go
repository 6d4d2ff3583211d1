package runtime_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
)

// Every refusal of a module at load is runtime.ErrInvalidModule, whichever
// stage refused it and on whichever engine the tests run: the sentinel is
// the engine's, so an engine's error passes through without being parsed,
// and the cause stays in the chain (precheck's *Rejection,
// ErrMalformed). The message names the sentinel once, right after the
// provider.
func TestInvalidModuleIsThroughEngines(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	// A Validate export whose body leaves an i64 where its type says i32:
	// every section decodes and no limit is exceeded, so precheck passes
	// it and only the engine's validator refuses it.
	engineRefused := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): {opI64Const, 0}}).bytes()
	if _, err := precheck.Check(engineRefused, precheck.Limits{}); err != nil {
		t.Fatalf("precheck refuses the module meant for the engine to refuse: %v", err)
	}
	sharedMemory := providerModule(0, nil)
	sharedMemory.extra = map[byte][]byte{5: vec([]byte{0x03, 0x01, 0x01})}

	for _, tc := range []struct {
		name  string
		wasm  []byte
		check func(t *testing.T, err error)
	}{
		{"not wasm (precheck: malformed)", []byte("#!/bin/sh\necho I am not WebAssembly\n"), func(t *testing.T, err error) {
			if !errors.Is(err, precheck.ErrMalformed) || !strings.Contains(err.Error(), "not a valid WebAssembly module: ") {
				t.Errorf("want precheck's ErrMalformed, as not a valid WebAssembly module: %v", err)
			}
		}},
		{"shared memory (precheck: rejected)", sharedMemory.bytes(), func(t *testing.T, err error) {
			var rej *precheck.Rejection
			if !errors.As(err, &rej) || rej.Limit != "NoSharedMemory" || !errors.Is(err, precheck.ErrRejected) {
				t.Errorf("want precheck's *Rejection of rule NoSharedMemory in the chain: %v", err)
			}
		}},
		{"type error (engine)", engineRefused, func(t *testing.T, err error) {
			if errors.Is(err, precheck.ErrMalformed) || errors.Is(err, precheck.ErrRejected) {
				t.Errorf("precheck refused it, not the engine: %v", err)
			}
			if !strings.Contains(err.Error(), "not a valid WebAssembly module: ") {
				t.Errorf("want the engine's not a valid WebAssembly module: %v", err)
			}
		}},
		{"missing exports (ABI check)", readFixture(t, "missing_export"), func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), "missing export") {
				t.Errorf("want the ABI check's missing export: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rt.LoadBytes(ctx, "invalid", tc.wasm)
			if err == nil {
				p.Close(ctx)
				t.Fatal("the module loaded")
			}
			if !errors.Is(err, runtime.ErrInvalidModule) {
				t.Errorf("%s: not ErrInvalidModule: %v", rt.Engine(), err)
			}
			sentinel := runtime.ErrInvalidModule.Error()
			if msg := err.Error(); !strings.HasPrefix(msg, `provider "invalid": `+sentinel+":") || strings.Count(msg, sentinel) != 1 {
				t.Errorf("%s: want %q once, right after the provider: %s", rt.Engine(), sentinel, msg)
			}
			tc.check(t, err)
		})
	}
}

// trapCause returns what ErrTrap was wrapped with ("%w: %w"), or nil.
func trapCause(err error) error {
	for err != nil {
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			if errs := multi.Unwrap(); len(errs) == 2 && errs[0] == runtime.ErrTrap {
				return errs[1]
			}
		}
		err = errors.Unwrap(err)
	}
	return nil
}

// A trap is ErrTrap of class trap, with the engine's error kept as its
// cause rather than flattened into the message; so is a trap while an
// instance starts.
func TestTrapKeepsEngineCause(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.LoadBytes(ctx, "trap", readFixture(t, "trap_all"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	err = cloud.SeedProvider(p, nil).Validate(newMachine("m", "u", map[string]any{}).Spec)
	if !errors.Is(err, runtime.ErrTrap) || runtime.ErrorClass(err) != runtime.ClassTrap {
		t.Fatalf("%s: want ErrTrap of class trap, got %v (class %q)", rt.Engine(), err, runtime.ErrorClass(err))
	}
	if cause := trapCause(err); cause == nil || !strings.HasSuffix(err.Error(), cause.Error()) {
		t.Errorf("%s: the engine's trap is not the cause of ErrTrap in %v", rt.Engine(), err)
	}

	m := providerModule(0, nil)
	m.funcs = append(m.funcs, genFunc{export: abi.ExportInitialize, body: []byte{opUnreachable}})
	_, err = rt.LoadBytes(ctx, "trap-init", m.bytes())
	if !errors.Is(err, runtime.ErrTrap) || errors.Is(err, runtime.ErrInvalidModule) || errors.Is(err, runtime.ErrLoadTimeout) {
		t.Fatalf("%s: a trapping _initialize: want ErrTrap only, got %v", rt.Engine(), err)
	}
	if cause := trapCause(err); cause == nil || !strings.HasSuffix(err.Error(), cause.Error()) {
		t.Errorf("%s: the engine's trap is not the cause of ErrTrap in %v", rt.Engine(), err)
	}
}

// A trap's message quotes what the module names — wazero's stack trace
// prints the function names of the name section — so a hostile module can
// put terminal escapes into it. The runtime's error text is printable; the
// engine's own error stays reachable as the cause.
func TestTrapMessageIsPrintable(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	const evil = "\x1b[2J\x1b]0;owned\x07evil"
	var names []byte
	names = binary.AppendUvarint(names, 10)
	for idx := uint64(1); idx <= 10; idx++ { // every function but the import
		names = binary.AppendUvarint(names, idx)
		names = binary.AppendUvarint(names, uint64(len(evil)))
		names = append(names, evil...)
	}
	payload := append([]byte{4}, "name"...)
	payload = append(payload, 1) // the function names subsection
	payload = binary.AppendUvarint(payload, uint64(len(names)))
	payload = append(payload, names...)
	wasm := append(readFixture(t, "trap_all"), 0) // a custom section
	wasm = binary.AppendUvarint(wasm, uint64(len(payload)))
	wasm = append(wasm, payload...)

	p, err := rt.LoadBytes(ctx, "hostile", wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	err = cloud.SeedProvider(p, nil).Validate(newMachine("m", "u", map[string]any{}).Spec)
	if !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("%s: want ErrTrap, got %v", rt.Engine(), err)
	}
	if strings.ContainsAny(err.Error(), "\x1b\x07") {
		t.Errorf("%s: the trap message carries control characters: %q", rt.Engine(), err.Error())
	}
	if cause := trapCause(err); cause == nil {
		t.Errorf("%s: no engine cause in %v", rt.Engine(), err)
	}
}
