// Package native serves a provider written with the Go guest SDK
// (guests/go/provider) from the host process itself, without WebAssembly:
// the same host functions, policy, error mapping and result decoding as a
// wasm module, through direct Go calls.
//
// It exists to compare: wasmprov's tests run every method through a .wasm
// and through Load of the same provider code and expect the same results,
// and the benchmarks use it as the native baseline. It offers no
// isolation; do not use it for untrusted code.
//
// It is a package of its own so that package runtime does not depend on the
// guest SDK: runtime offers the engine-neutral seam (Runtime.LoadFunc,
// NativeHost), and this package adapts the SDK's dispatcher onto it.
package native

import (
	"context"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// Load serves p as the provider name on rt. declared is what the module
// built from p would declare (provider.Needs); the runtime's or the
// WithPolicy option's policy grants from it as for a module.
func Load(rt *runtime.Runtime, name string, p provider.Provider, declared abi.Capability, opts ...runtime.LoadOption) (*runtime.Provider, error) {
	return rt.LoadFunc(name, declared, func(ctx context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		// The declaration decides the error mapping (DeletionInProgress is
		// IN_PROGRESS only with abi.CapAsyncDelete), as the module's would.
		return provider.DispatchDeclared(ctx, h, p, declared|abi.CapLog, m)
	}, opts...)
}

// runtime.NativeHost is the SDK's Host as it is: its methods are the
// Host's, and a failed host function is an *abi.HostError, which is the
// SDK's *provider.HostError, so provider code inspects it (errors.As)
// exactly as inside a wasm module. NativeHost is one pointer, so Dispatch
// gets it as a Host without an allocation.
var _ provider.Host = runtime.NativeHost{}
