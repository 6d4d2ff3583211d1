package wazeroengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
)

// A compiled module, its instances and their calls.

type module struct {
	engine        *Engine
	sh            *sharedModule
	wr            wazero.Runtime
	compiled      wazero.CompiledModule
	interruptible bool
	closeOnce     sync.Once
	closeErr      error
}

func (m *module) ExportedFunctions() map[string]engine.Signature {
	out := map[string]engine.Signature{}
	for name, def := range m.compiled.ExportedFunctions() {
		out[name] = engine.Signature{Params: def.ParamTypes(), Results: def.ResultTypes()}
	}
	return out
}

func (m *module) ExportedMemories() []string {
	var names []string
	for name := range m.compiled.ExportedMemories() {
		names = append(names, name)
	}
	return names
}

func (m *module) ImportedFunctions() []engine.Import {
	var out []engine.Import
	for _, def := range m.compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		if m.interruptible && mod == interrupt.YieldModule {
			continue // added by the instrumentation
		}
		out = append(out, engine.Import{Module: mod, Name: name,
			Signature: engine.Signature{Params: def.ParamTypes(), Results: def.ResultTypes()}})
	}
	return out
}

// Close releases the module and its runtime. The compilation cache is
// shared by every module: closing the runtime alone would leave this
// module's code in it.
//
// A module shared by several Compiles is released by the last Close.
func (m *module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		e := m.engine
		e.mu.Lock()
		m.sh.refs--
		last := m.sh.refs == 0
		if last {
			delete(e.shared, m.sh.key)
		}
		e.mu.Unlock()
		if last {
			m.closeErr = m.sh.close(ctx)
		}
	})
	return m.closeErr
}

func (m *module) Instantiate(ctx context.Context, c engine.InstanceConfig) (engine.Instance, error) {
	state, err := wasip1.New(c)
	if err != nil {
		return nil, err
	}
	// The WASI configuration is the state's; wazero's own sys context is
	// left at its defaults, which nothing reads.
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions() // the runtime runs _initialize, under its deadline
	switch {
	case m.sh.image != nil:
		ctx = experimental.WithMemoryAllocator(ctx, m.engine.mapped.WithImage(m.sh.image))
	case m.engine.mapped != nil:
		ctx = experimental.WithMemoryAllocator(ctx, m.engine.mapped)
	}
	inst := &instance{wasi: state, interruptible: m.interruptible}
	inst.call.inst = inst
	// A start section's host calls find the instance like any other, and
	// the end of ctx interrupts it (at its next yield or host call): no one
	// else can, as the instance is not returned yet.
	inst.call.Context = ctx
	stop := context.AfterFunc(ctx, state.Interrupt)
	mod, err := instantiateModule(&inst.call, m.wr, m.compiled, cfg)
	interrupted := !stop()
	inst.call.Context = nil
	if interrupted {
		if err == nil {
			_ = mod.Close(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("instantiating module: %w", ctx.Err())
	}
	if err != nil {
		return nil, convert(err)
	}
	inst.mod = mod
	return inst, nil
}

// instantiateModule is wr.InstantiateModule, a panic an error: wazero
// panics when an allocator returns no memory for the initial size (an
// image that cannot be read back, mmapmem.WithImage), which is a failed
// instantiation, not a dead host.
func instantiateModule(ctx context.Context, wr wazero.Runtime, compiled wazero.CompiledModule, cfg wazero.ModuleConfig) (mod api.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, fmt.Errorf("wazero failed to instantiate the module: %v", r)
		}
	}()
	return wr.InstantiateModule(ctx, compiled, cfg)
}

type instance struct {
	mod           api.Module
	wasi          *wasip1.State
	interruptible bool
	// call is the context of the call in flight (used by one goroutine at
	// a time, like the instance); host functions find the instance in it.
	// It is not retained past the call: host functions get the caller's
	// context, not this one.
	call callContext
}

func (i *instance) Function(name string) engine.Function {
	f := i.mod.ExportedFunction(name)
	if f == nil {
		return nil
	}
	return function{i: i, f: f}
}

func (i *instance) Interruptible() bool { return i.interruptible }

// Interrupt marks the instance: the guest's next yield (within
// interrupt.Budget units of work) or host call panics out of the call, and a
// sleeping poll_oneoff wakes up and does. Nothing is written into the guest
// from this goroutine.
func (i *instance) Interrupt() { i.wasi.Interrupt() }

func (i *instance) Close(ctx context.Context) error { return i.mod.Close(ctx) }

type function struct {
	i *instance
	f api.Function
}

func (f function) Call(ctx context.Context, stack []uint64) error {
	c := &f.i.call
	prev := c.Context
	c.Context = ctx
	err := f.f.CallWithStack(c, stack)
	c.Context = prev
	if err != nil {
		err = convert(err)
		var exit *engine.ExitError
		if errors.As(err, &exit) {
			// As wazero's proc_exit does: later calls fail with the exit.
			_ = f.i.mod.CloseWithExitCode(ctx, exit.Code)
			return err
		}
		return f.i.stackOverflow(err)
	}
	return nil
}

// stackOverflow words a trap of FlagBudget's stack bound as wasmtime words
// its own: the bound's check traps with unreachable, which alone would send
// an author looking for a bug that is not there. The counter is below 0
// only when a function's entry took more than was left (interrupt's
// stack.go).
func (i *instance) stackOverflow(err error) error {
	g := i.mod.ExportedGlobal(interrupt.StackName)
	if g == nil || int32(g.Get()) >= 0 {
		return err
	}
	msg := err.Error()
	const unreachable = "wasm error: unreachable"
	if !strings.HasPrefix(msg, unreachable) {
		return err
	}
	return fmt.Errorf("wasm error: stack overflow (the call's frames exceed the %d MiB call stack bound)%s",
		interrupt.StackLimit>>20, strings.TrimPrefix(msg, unreachable))
}

// convert turns a WASI exit into *engine.ExitError; other errors are traps.
func convert(err error) error {
	var exit *engine.ExitError
	if errors.As(err, &exit) {
		return exit
	}
	var sysExit *sys.ExitError
	if errors.As(err, &sysExit) {
		return &engine.ExitError{Code: sysExit.ExitCode()}
	}
	return err
}
