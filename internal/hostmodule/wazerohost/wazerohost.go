// Package wazerohost binds the wasmprov_v1 host functions
// (internal/hostmodule) into a plain wazero runtime, for benchmarks and
// tests that drive wazero directly instead of through the runtime's
// engine. It is apart from hostmodule so that package stays engine-free.
package wazerohost

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
)

// Instantiate defines the wasmprov_v1 host module in a wazero runtime. Call
// it once per runtime, before instantiating guests. It is the wazero binding
// of hostmodule.Functions; the runtime's engines bind the same table their
// own way.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	return InstantiateFunctions(ctx, r, hostmodule.Functions())
}

// InstantiateFunctions defines a wasmprov_v1 host module of fns in r.
func InstantiateFunctions(ctx context.Context, r wazero.Runtime, fns []hostmodule.Function) (api.Module, error) {
	b := r.NewHostModuleBuilder(abi.ModuleName)
	for _, f := range fns {
		fn := f.Fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				fn(ctx, mod.Memory(), stack)
			}), f.Params, f.Results).
			Export(f.Name)
	}
	m, err := b.Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("instantiating %s host module: %w", abi.ModuleName, err)
	}
	return m, nil
}
