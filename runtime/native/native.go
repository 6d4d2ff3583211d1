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
// NativeHost), and this package adapts the SDK's Dispatch onto it.
package native

import (
	"context"
	"errors"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// Load serves p as the provider name on rt. declared is what the module
// built from p would declare (provider.Needs); the runtime's or the
// WithPolicy option's policy grants from it as for a module.
func Load(rt *runtime.Runtime, name string, p provider.Provider, declared abi.Capability, opts ...runtime.LoadOption) (*runtime.Provider, error) {
	return rt.LoadFunc(name, declared, func(ctx context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		return provider.Dispatch(ctx, sdkHost{h}, p, m)
	}, opts...)
}

// sdkHost is the SDK's Host on a runtime.NativeHost: the same calls, with a
// host function's failure as the SDK's *provider.HostError, which provider
// code inspects (errors.As) exactly as inside a wasm module. It is one
// pointer, so Dispatch gets it as a Host without an allocation.
type sdkHost struct{ h runtime.NativeHost }

func (s sdkHost) Input(part abi.Input) ([]byte, error) {
	b, err := s.h.Input(part)
	return b, sdkError(err)
}

func (s sdkHost) Output(b []byte) error { return sdkError(s.h.Output(b)) }

func (s sdkHost) SetError(reason, message string, retryAfterMillis int64) {
	s.h.SetError(reason, message, retryAfterMillis)
}

func (s sdkHost) Log(level int32, message string, attrs []byte) { s.h.Log(level, message, attrs) }

func (s sdkHost) Call(fn string, request []byte) ([]byte, error) {
	b, err := s.h.Call(fn, request)
	return b, sdkError(err)
}

// sdkError turns a *runtime.HostError into the SDK's *provider.HostError
// with the same fields; any other error (there is none today) passes as it
// is.
func sdkError(err error) error {
	if err == nil { // the common case, without errors.As's allocation
		return nil
	}
	var he *runtime.HostError
	if errors.As(err, &he) {
		return &provider.HostError{Func: he.Func, Errno: he.Errno, Message: he.Message}
	}
	return err
}
