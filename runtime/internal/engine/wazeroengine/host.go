package wazeroengine

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
)

// The host modules a module's runtime binds (Compile): WASI, the host
// functions and the instrumentation's yield, each finding its instance in
// the call's context and none running once the instance was interrupted.

// errInterrupted is what an interrupted instance's yield and host
// functions panic with; the runtime knows it interrupted the call and
// reports the context's error instead.
var errInterrupted = wasip1.ErrInterrupted

// errNoInstance is a host function called outside Function.Call and
// Instantiate: a bug in this engine, never a guest's doing.
var errNoInstance = errors.New("wazero engine: host function called without its instance")

// callContext is the context of every call into an instance: the caller's
// context and the instance, which host functions take from it.
type callContext struct {
	context.Context
	inst *instance
}

// instanceOf returns the instance of a host function call.
func instanceOf(ctx context.Context) *callContext {
	c, ok := ctx.(*callContext)
	if !ok || c.inst == nil {
		panic(errNoInstance)
	}
	return c
}

// memoryOf is the guest's memory, or an empty one if it has none (wazero's
// own WASI would dereference nil).
func memoryOf(mod api.Module) hostmodule.Memory {
	if m := mod.Memory(); m != nil {
		return m
	}
	return noMemory{}
}

type noMemory struct{}

func (noMemory) Read(offset, n uint32) ([]byte, bool) { return nil, offset == 0 && n == 0 }
func (noMemory) Write(offset uint32, v []byte) bool   { return offset == 0 && len(v) == 0 }

// bindWASI defines the wasi_snapshot_preview1 host module: package
// wasip1's functions, each given the calling instance's state, and none
// run once the instance was interrupted.
func bindWASI(ctx context.Context, wr wazero.Runtime) error {
	b := wr.NewHostModuleBuilder(wasip1.ModuleName)
	for _, f := range wasip1.Functions() {
		fn := f.Fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				c := instanceOf(ctx)
				if c.inst.wasi.Interrupted() {
					panic(errInterrupted)
				}
				fn(c.Context, c.inst.wasi, memoryOf(mod), stack)
			}), f.Params, f.Results).
			Export(f.Name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiating %s host module: %w", wasip1.ModuleName, err)
	}
	return nil
}

// bindHostFunctions defines a host module for each import module of fns
// (wasmprov_v1, and an embedder's modules): the wazero binding of
// hostmodule.Table, with the interrupt check. The host functions get the
// caller's context, as wazerohost.Instantiate gives them.
func bindHostFunctions(ctx context.Context, wr wazero.Runtime, fns []hostmodule.Function) error {
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, f := range fns {
		b, ok := builders[f.Module]
		if !ok {
			b = wr.NewHostModuleBuilder(f.Module)
			builders[f.Module] = b
			order = append(order, f.Module)
		}
		fn := f.Fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				c := instanceOf(ctx)
				if c.inst.wasi.Interrupted() {
					panic(errInterrupted)
				}
				fn(c.Context, memoryOf(mod), stack)
			}), f.Params, f.Results).
			Export(f.Name)
	}
	for _, name := range order {
		if _, err := builders[name].Instantiate(ctx); err != nil {
			return fmt.Errorf("instantiating %s host module: %w", name, err)
		}
	}
	return nil
}

// bindYield defines the function the instrumented guest calls every
// interrupt.Budget units of work.
func bindYield(ctx context.Context, wr wazero.Runtime) error {
	_, err := wr.NewHostModuleBuilder(interrupt.YieldModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
			if instanceOf(ctx).inst.wasi.Interrupted() {
				panic(errInterrupted)
			}
		}), nil, nil).
		Export(interrupt.YieldName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiating %s host module: %w", interrupt.YieldModule, err)
	}
	return nil
}
