package wazeroengine

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// slowFunctionModule is one function that takes wazero seconds to compile:
// a loop that reads locals locals, then branches back to its header from
// backs places (each read walks the chain of br_if continuations back to
// the header, for each back edge: locals × backs²).
func slowFunctionModule(locals, backs int) []byte {
	var expr []byte
	expr = append(expr, 0x03, 0x40) // loop
	for i := 0; i < locals; i++ {
		expr = append(expr, 0x20)
		expr = wasmbin.AppendUint64(expr, uint64(i))
		expr = append(expr, 0x1a) // local.get i; drop
	}
	expr = append(expr, bytes.Repeat([]byte{0x20, 0x00, 0x0d, 0x00}, backs)...) // local.get 0; br_if 0
	expr = append(expr, 0x0b, 0x0b)                                             // end end
	body := wasmbin.AppendUint64(nil, 1)
	body = wasmbin.AppendUint64(body, uint64(locals))
	body = append(body, 0x7f) // i32
	body = append(body, expr...)
	section := func(id byte, content []byte) []byte {
		return append(wasmbin.AppendUint64([]byte{id}, uint64(len(content))), content...)
	}
	code := wasmbin.AppendUint64([]byte{0x01}, uint64(len(body)))
	code = append(code, body...)
	m := []byte(wasmbin.Magic + wasmbin.Version)
	m = append(m, section(wasmbin.SectionIDType, []byte{0x01, 0x60, 0x00, 0x00})...)
	m = append(m, section(wasmbin.SectionIDFunction, []byte{0x01, 0x00})...)
	m = append(m, section(wasmbin.SectionIDCode, code)...)
	return m
}

// TestRealTimeCompileReturnsAtTheDeadline: a compile whose context ends while a
// worker is inside one long function returns then, not when the function
// is done; the abandoned compile finishes in the background and Close
// waits for it.
func TestRealTimeCompileReturnsAtTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a slow function")
	}
	wasm := slowFunctionModule(8, 8000)
	ctx := context.Background()
	cfg := engine.ModuleConfig{MemoryLimitPages: 16, HostFunctions: hostmodule.Functions()}

	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	const deadline = 200 * time.Millisecond
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	_, err = e.Compile(dctx, wasm, cfg)
	returned := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("compile past its deadline: %v, want context.DeadlineExceeded", err)
	}
	start = time.Now()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed := time.Since(start)
	t.Logf("returned %v after the start (deadline %v); Close waited %v for the abandoned compile", returned, deadline, closed)
	if returned > deadline+300*time.Millisecond {
		t.Errorf("the compile returned %v after its start, deadline %v", returned, deadline)
	}
	if closed < deadline {
		t.Errorf("Close took %v: did it wait for the compile?", closed)
	}
}
