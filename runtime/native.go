package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/internal/hostfuncs"
)

// LoadNative serves a provider written with the Go guest SDK from the host
// process itself, without WebAssembly: the same host functions, policy,
// error mapping and result decoding as a wasm module, but direct Go calls.
//
// It exists to compare: wasmprov's tests run every method through a .wasm
// and through LoadNative of the same provider code and expect the same
// results, and the benchmarks use it as the native baseline. It offers no
// isolation; do not use it for untrusted code.
func (r *Runtime) LoadNative(name string, p provider.Provider, declared abi.Capability, opts ...LoadOption) (*Provider, error) {
	lc := loadConfig{name: name}
	for _, o := range opts {
		o(&lc)
	}
	policy := r.cfg.defaultPolicy
	if lc.policy != nil {
		policy = *lc.policy
	}
	policy = policy.withDefaults()
	granted, err := policy.grant(declared | abi.CapLog)
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", lc.name, err)
	}
	np := &Provider{
		name:     lc.name,
		rt:       r,
		policy:   policy,
		logger:   r.cfg.logger.With("provider", lc.name),
		declared: declared | abi.CapLog,
		granted:  granted,
		native:   p,
	}
	np.env = r.newEnv(lc.name, np.logger, policy)
	r.track(np)
	return np, nil
}

func (p *Provider) invokeNative(ctx context.Context, call *hostfuncs.Call) error {
	status := provider.Dispatch(ctx, nativeHost{call}, p.native, call.Method)
	return p.statusError(call, status)
}

// nativeHost implements the SDK's Host directly on a hostfuncs.Call.
type nativeHost struct{ c *hostfuncs.Call }

func (h nativeHost) Input(part abi.Input) ([]byte, error) {
	b, err := h.c.Input(part)
	if err != nil {
		return nil, hostError("input", err)
	}
	return append([]byte(nil), b...), nil
}

func (h nativeHost) Output(b []byte) error {
	if err := h.c.SetOutput(b); err != nil {
		return hostError("output", err)
	}
	return nil
}

func (h nativeHost) SetError(reason, message string, retryAfterMillis int64) {
	h.c.SetError(reason, message, retryAfterMillis)
}

func (h nativeHost) Log(level int32, message string, attrs []byte) {
	_ = h.c.Log(level, []byte(message), attrs)
}

func (h nativeHost) Call(fn string, req []byte) ([]byte, error) {
	b, err := h.c.Invoke(fn, req)
	if err != nil {
		return nil, hostError(fn, err)
	}
	return b, nil
}

func hostError(fn string, err error) error {
	var he *hostfuncs.Error
	if errors.As(err, &he) {
		msg := he.Message
		if he.Errno == abi.ErrnoNotDeclared {
			msg = "capability not declared or not granted"
		}
		return &provider.HostError{Func: fn, Errno: he.Errno, Message: msg}
	}
	return &provider.HostError{Func: fn, Errno: abi.ErrnoFailed, Message: err.Error()}
}
