package hostmodule

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/internal/guesttext"
)

// Table returns the wasmprov_v1 imports and the embedder's custom host
// functions, sorted by module and name. Without custom functions it is
// Functions() itself, so engines keep sharing compiled modules between
// runtimes; with them, the caller builds it once and passes that slice to
// every compile. The custom functions must have passed Validate and be
// unique by module and name (runtime.WithHostFunctions checks both).
func Table(custom []hostfuncs.Function) []Function {
	if len(custom) == 0 {
		return Functions()
	}
	ds := append([]dataFunc(nil), dataFuncs...)
	for _, f := range custom {
		ds = append(ds, customFunc(f))
	}
	return table(ds)
}

// customFunc is f behind the data framing: the same checks as a built-in,
// then f.Handler under the call's deadline.
func customFunc(f hostfuncs.Function) dataFunc {
	label := f.Module + "." + f.Name
	perCall := int64(f.MaxUsesPerCall)
	if perCall == 0 {
		perCall = hostfuncs.DefaultMaxUsesPerCall
	}
	maxResult := f.MaxResultBytes
	if maxResult == 0 {
		maxResult = hostfuncs.DefaultMaxResultBytes
	}
	return dataFunc{module: f.Module, name: f.Name, label: label, quota: label,
		granted: func(c *Call) error {
			if c.Env.CustomGranted[f.Capability] {
				return nil
			}
			c.logger().Warn("guest called a host function it was not granted",
				"function", label, "capability", f.Capability)
			return errorf(abi.ErrnoNotDeclared, "%s needs capability %q, which the policy did not grant", label, f.Capability)
		},
		maxRequest: func(l Limits) int64 {
			if f.MaxRequestBytes > 0 {
				return min(int64(f.MaxRequestBytes), l.MaxRequestBytes)
			}
			return l.MaxRequestBytes
		},
		perCall: func(Limits) int64 { return perCall },
		fn: func(ctx context.Context, c *Call, req []byte) ([]byte, error) {
			return c.serveCustom(ctx, label, f.Handler, maxResult, req)
		},
	}
}

// serveCustom runs an embedder's handler for one use. It runs on a
// goroutine of its own so that the guest gets its answer at the call's
// deadline even from a handler that ignores ctx (the handler is then left
// to return on its own); a panic is the handler's bug, answered FAILED and
// logged with its stack, never the host's crash.
func (c *Call) serveCustom(ctx context.Context, label string, h hostfuncs.Handler, maxResult int, body []byte) ([]byte, error) {
	req := hostfuncs.Request{Provider: c.Env.Provider, Method: c.Method.String(), Body: body}
	if c.Machine != nil {
		req.Machine = hostfuncs.MachineRef{Namespace: c.Machine.Namespace, Name: c.Machine.Name, UID: string(c.Machine.UID)}
	}
	type answer struct {
		b   []byte
		err error
	}
	done := make(chan answer, 1) // the handler never blocks on a caller that left
	logger := c.logger()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				logger.Error("custom host function panicked", "function", label,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- answer{err: errorf(abi.ErrnoFailed, "%s failed on the host", label)}
			}
		}()
		b, err := h(ctx, req)
		done <- answer{b, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		logger.Warn("custom host function did not return before the call's deadline; the guest was answered FAILED",
			"function", label, "error", ctx.Err())
		return nil, errorf(abi.ErrnoFailed, "%s did not answer before the call's deadline: %v", label, ctx.Err())
	}
	if a.err != nil {
		e, ok := a.err.(*hostfuncs.Error)
		if !ok || e.Errno == abi.ErrnoNotDeclared || e.Errno >= 0 || e.Errno < abi.ErrnoNotFound {
			return nil, errorf(abi.ErrnoFailed, "%s", guesttext.ClipPrintable(a.err.Error(), int(c.Env.limits().MaxMessageBytes)))
		}
		return nil, errorf(e.Errno, "%s", guesttext.ClipPrintable(e.Message, int(c.Env.limits().MaxMessageBytes)))
	}
	if len(a.b) > maxResult {
		logger.Error("custom host function returned more than its MaxResultBytes; the guest was answered TOO_LARGE",
			"function", label, "bytes", len(a.b), "limit", maxResult)
		return nil, errorf(abi.ErrnoTooLarge, "%s result of %d bytes exceeds its limit of %d", label, len(a.b), maxResult)
	}
	return a.b, nil
}
