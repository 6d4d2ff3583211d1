package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostalias"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
)

// NativeHost is the host side of one call of a NativeFunc: the host
// functions a wasm guest imports, as Go methods. An error its methods return
// is a *HostError. Only the NativeHost a NativeFunc is given is valid, and
// only until the NativeFunc returns.
//
// It is a one-pointer handle rather than an interface so that an adapter
// wrapping it (runtime/native wraps it in the SDK's Host) is one pointer
// too, and stores in an interface without an allocation per call.
type NativeHost struct{ c *hostmodule.Call }

// HostError is a host function's failure as NativeHost reports it: the
// Errno and message a wasm guest would read. It is abi's type, which the Go
// SDK returns too.
type HostError = abi.HostError

// NativeFunc serves one call of method m of a native provider through h
// and returns the status a wasm export would.
type NativeFunc func(ctx context.Context, h NativeHost, m abi.Method) abi.Status

// LoadFunc serves a provider from the host process itself, without
// WebAssembly: fn gets the same host functions, policy, error mapping and
// result decoding as a wasm module, through direct Go calls. declared is
// what a module's capabilities export would return.
//
// It exists to compare, and offers no isolation: do not use it for
// untrusted code. Package runtime/native builds a NativeFunc from a
// provider written with the Go guest SDK; runtime itself does not depend on
// the SDK.
func (r *Runtime) LoadFunc(name string, declared abi.Capability, fn NativeFunc, opts ...LoadOption) (*Provider, error) {
	lc := loadConfig{name: name}
	for _, o := range opts {
		o(&lc)
	}
	if fn == nil {
		return nil, fmt.Errorf("provider %q: no NativeFunc", lc.name)
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
		native:   fn,
		// The SDK's dispatcher answers every method, the optional ones
		// included.
		hasMetrics: true,
	}
	aliases, err := hostalias.Parse(policy.HostAliases)
	if err != nil {
		return nil, fmt.Errorf("provider %q: invalid policy: %w", lc.name, err)
	}
	np.env = r.newEnv(lc.name, np.logger, policy, aliases)
	r.track(np)
	return np, nil
}

func (p *Provider) invokeNative(ctx context.Context, call *hostmodule.Call) error {
	status := p.native(ctx, NativeHost{call}, call.Method)
	return p.statusError(call, status)
}

// Input returns a copy of an input part of the call.
func (h NativeHost) Input(part abi.Input) ([]byte, error) {
	b, err := h.c.Input(part)
	if err != nil {
		return nil, hostError("input", err)
	}
	return append([]byte(nil), b...), nil
}

// Output sets the call's result document.
func (h NativeHost) Output(b []byte) error {
	if err := h.c.SetOutput(b); err != nil {
		return hostError("output", err)
	}
	return nil
}

// SetError sets the call's error reason, message and retry hint.
func (h NativeHost) SetError(reason, message string, retryAfterMillis int64) {
	h.c.SetError(reason, message, retryAfterMillis)
}

// Log emits a log record; attrs is a JSON object or empty.
func (h NativeHost) Log(level int32, message string, attrs []byte) {
	_ = h.c.Log(level, []byte(message), attrs)
}

// Call invokes a data host function (abi.ImportHTTP, ...) with a JSON
// request and returns its result.
func (h NativeHost) Call(fn string, req []byte) ([]byte, error) {
	b, err := h.c.Invoke(fn, req)
	if err != nil {
		return nil, hostError(fn, err)
	}
	return b, nil
}

// hostError is what a wasm guest would read of err: its errno and message,
// with a refused capability worded as the guest SDK words it.
func hostError(fn string, err error) error {
	var he *hostmodule.Error
	if errors.As(err, &he) {
		msg := he.Message
		if he.Errno == abi.ErrnoNotDeclared {
			msg = "capability not declared or not granted"
		}
		return &HostError{Func: fn, Errno: he.Errno, Message: msg}
	}
	return &HostError{Func: fn, Errno: abi.ErrnoFailed, Message: err.Error()}
}
