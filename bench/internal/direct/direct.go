// Package direct instantiates a wasmprov guest with wazero and the wasmprov
// host functions, without the runtime package: it measures what the runtime
// does not expose (the raw export-call floor, an instance's linear memory)
// and lets guest variants be timed piece by piece.
package direct

import (
	"context"
	"log/slog"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/internal/hostmodule/wazerohost"
)

// Module is a compiled guest.
type Module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	env      *hostmodule.Env
}

// Compile compiles the guest at path with the runtime's settings.
func Compile(ctx context.Context, path string, interruptible bool) (*Module, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(interruptible))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	if _, err := wazerohost.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	c, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	return &Module{rt: rt, compiled: c, env: &hostmodule.Env{Provider: "direct", Logger: slog.New(slog.DiscardHandler)}}, nil
}

// Close releases everything.
func (m *Module) Close(ctx context.Context) error { return m.rt.Close(ctx) }

// Instance is one instantiated guest.
type Instance struct {
	m     *Module
	Mod   api.Module
	fns   map[string]api.Function
	stack []uint64
}

// Instantiate creates an instance configured like the runtime's (GOGC=50,
// _initialize as start function, no clocks).
func (m *Module) Instantiate(ctx context.Context) (*Instance, error) {
	return m.InstantiateEnv(ctx, "GOGC", "50")
}

// InstantiateEnv is Instantiate with other environment variables
// (key, value pairs), e.g. "GOGC", "200".
func (m *Module) InstantiateEnv(ctx context.Context, kv ...string) (*Instance, error) {
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize)
	for i := 0; i+1 < len(kv); i += 2 {
		cfg = cfg.WithEnv(kv[i], kv[i+1])
	}
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, err
	}
	return &Instance{m: m, Mod: mod, fns: map[string]api.Function{}, stack: make([]uint64, 1)}, nil
}

func (i *Instance) fn(name string) api.Function {
	f, ok := i.fns[name]
	if !ok {
		f = i.Mod.ExportedFunction(name)
		i.fns[name] = f
	}
	return f
}

// CallRaw calls an export that takes nothing, with no Call in the context:
// the floor of a guest call.
func (i *Instance) CallRaw(ctx context.Context, export string) (uint64, error) {
	err := i.fn(export).CallWithStack(ctx, i.stack)
	return i.stack[0], err
}

// CallSpec calls method m with spec as its MachineSpec input, through the
// real host functions.
func (i *Instance) CallSpec(ctx context.Context, m abi.Method, spec *clusterv1alpha1.MachineSpec) (abi.Status, *hostmodule.Call, error) {
	call := hostmodule.NewCall(ctx, i.m.env, m, abi.CapLog|abi.CapHTTP)
	call.Spec = spec
	err := i.fn(m.Export()).CallWithStack(hostmodule.WithCall(ctx, call), i.stack)
	return abi.Status(int32(uint32(i.stack[0]))), call, err
}

// CallExport calls an arbitrary export as if it served method m with spec.
func (i *Instance) CallExport(ctx context.Context, export string, m abi.Method, spec *clusterv1alpha1.MachineSpec) (uint64, error) {
	call := hostmodule.NewCall(ctx, i.m.env, m, abi.CapLog|abi.CapHTTP)
	call.Spec = spec
	err := i.fn(export).CallWithStack(hostmodule.WithCall(ctx, call), i.stack)
	return i.stack[0], err
}

// MemoryBytes is the instance's linear memory size.
func (i *Instance) MemoryBytes() uint32 { return i.Mod.Memory().Size() }

// Close closes the instance.
func (i *Instance) Close(ctx context.Context) error { return i.Mod.Close(ctx) }
