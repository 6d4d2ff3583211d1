package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/pool"
)

// observe reports one method call to the runtime's CallObserver: defer
// p.observe(m)(&err) at the top of a method, so the error observed is the
// method's — a result the host refused after the guest returned OK counts
// as the failed call it is. A deletion in progress is not a failure.
func (p *Provider) observe(m abi.Method) func(*error) {
	o := p.rt.cfg.observer
	if o == nil {
		return func(*error) {}
	}
	start := time.Now()
	return func(err *error) {
		observed := *err
		if errors.Is(observed, ErrDeletionInProgress) {
			observed = nil // progress, not a failure
		}
		o(p.name, m, time.Since(start), observed)
	}
}

// invoke runs one method call on a pooled instance and turns the guest's
// status into an error with machine-controller's semantics.
func (p *Provider) invoke(ctx context.Context, call *hostmodule.Call) error {
	m := call.Method
	if err := checkProviderSpec(call); err != nil {
		return &CallError{Provider: p.name, Method: m, Class: ClassTerminal, Err: err}
	}
	// A call without a deadline of its own gets the policy's timeout —
	// through a timer each instance reuses and a deadline host functions
	// apply when they block, not a new context per call: a context with a
	// timer costs a fifth of an empty call.
	var timeout time.Duration
	if _, ok := ctx.Deadline(); !ok {
		timeout = time.Duration(p.policy.CallTimeout)
		call.SetDeadline(time.Now().Add(timeout))
	}
	hostmodule.SetContext(call, ctx)
	defer call.Release()
	if p.native != nil {
		return p.invokeNative(ctx, call)
	}
	inst, err := p.pool.Get(ctx)
	if err != nil {
		if errors.Is(err, pool.ErrClosed) {
			return &CallError{Provider: p.name, Method: m, Class: ClassTransient, Err: ErrProviderClosed}
		}
		return p.contextError(m, err)
	}
	w := inst.watch(ctx)
	inst.startTimeout(timeout)
	callErr := inst.fns[m].Call(hostmodule.WithCall(ctx, call), inst.stack[:])
	inst.calls++
	timedOut := inst.stopTimeout()
	if w.stop() { // interrupted: the instance is discarded even if it had just returned
		callErr = interruptedError(ctx)
	} else if timedOut || call.DeadlineExceeded() {
		callErr = errInterruptedDeadline
	}
	if callErr != nil {
		// A trapped or interrupted instance is never reused: its memory may
		// be torn and, for a Go guest, its runtime corrupted.
		p.pool.Put(context.WithoutCancel(ctx), inst, false)
		return p.trapError(ctx, m, callErr)
	}
	status := abi.Status(int32(uint32(inst.stack[0])))
	switch {
	case status == abi.StatusPanic || !p.validStatus(m, status),
		status == abi.StatusTerminal && !slices.Contains(terminalReasons, clusterv1alpha1.MachineStatusError(call.ErrReason)):
		p.pool.Put(ctx, inst, false) // torn, confused or lying: never reused
	case p.policy.MaxCallsPerInstance >= 0 && inst.calls >= p.policy.MaxCallsPerInstance:
		p.pool.Retire(ctx, inst) // healthy, but recycled to bound its memory
	default:
		p.pool.Put(ctx, inst, true)
	}
	return p.statusError(call, status)
}

// checkProviderSpec refuses a Machine whose providerSpec.value is not JSON
// before any guest sees it: it could not be encoded for the guest, and the
// mistake is the Machine author's, so it is terminal.
func checkProviderSpec(call *hostmodule.Call) error {
	var spec *clusterv1alpha1.MachineSpec
	switch {
	case call.Spec != nil:
		spec = call.Spec
	case call.Machine != nil:
		spec = &call.Machine.Spec
	default:
		return nil
	}
	if v := spec.ProviderSpec.Value; v != nil && len(v.Raw) > 0 && !json.Valid(v.Raw) {
		return cloudprovidererrors.TerminalError{
			Reason:  clusterv1alpha1.InvalidConfigurationMachineError,
			Message: "machine.spec.providerSpec.value is not valid JSON",
		}
	}
	return nil
}

func (p *Provider) statusError(call *hostmodule.Call, status abi.Status) error {
	msg := call.ErrMessage
	var class Class
	var err error
	switch status {
	case abi.StatusOK:
		return nil
	case abi.StatusTerminal:
		reason := clusterv1alpha1.MachineStatusError(call.ErrReason)
		if !slices.Contains(terminalReasons, reason) {
			// It would be written into the Machine's status.errorReason,
			// which tools and people act on: only machine-controller's
			// values are meaningful there.
			return p.badTerminal(call)
		}
		class = ClassTerminal
		err = cloudprovidererrors.TerminalError{Reason: reason, Message: msg}
	case abi.StatusNotFound:
		class = ClassNotFound
		err = cloudprovidererrors.ErrInstanceNotFound
		if msg != "" && msg != err.Error() {
			err = fmt.Errorf("%w: %s", cloudprovidererrors.ErrInstanceNotFound, msg)
		}
	case abi.StatusError:
		class = ClassTransient
		if msg == "" {
			msg = "provider reported an error without a message"
		}
		err = errors.New(msg)
		if call.RetryAfter > 0 {
			err = &cloudprovidererrors.RetryableError{RetryAfter: call.RetryAfter, Err: err}
		}
	case abi.StatusInProgress:
		if !p.validStatus(call.Method, status) {
			return p.badInProgress(call)
		}
		class = ClassTransient
		err = &progressError{note: msg}
		if call.RetryAfter > 0 {
			err = &cloudprovidererrors.RetryableError{RetryAfter: call.RetryAfter, Err: err}
		}
	case abi.StatusPanic:
		class = ClassTrap
		err = fmt.Errorf("%w: %s", ErrGuestPanic, msg)
		call.Logger().Warn("guest panicked; instance discarded", "panic", msg)
	default:
		class = ClassBadResult
		err = fmt.Errorf("%w: unknown status %d", ErrBadResult, int32(status))
	}
	return &CallError{Provider: p.name, Method: call.Method, Class: class, Err: err}
}

// validStatus reports whether a method may return status: OK to PANIC
// from every method, IN_PROGRESS from Delete of a module that declared
// abi.CapAsyncDelete (abi/SPEC.md §4).
func (p *Provider) validStatus(m abi.Method, status abi.Status) bool {
	switch {
	case status >= abi.StatusOK && status <= abi.StatusPanic:
		return true
	case status == abi.StatusInProgress:
		return m == abi.MethodDelete && p.declared.Has(abi.CapAsyncDelete)
	}
	return false
}

// badInProgress is the error of an IN_PROGRESS status the module may not
// return: a protocol violation, never read as "call again" (a module that
// did not declare async_delete was built not to mean it).
func (p *Provider) badInProgress(call *hostmodule.Call) error {
	if call.Method != abi.MethodDelete {
		return p.badResult(call.Method, "%s returned IN_PROGRESS (5), which only Delete may return (SPEC §4)", call.Method)
	}
	return p.badResult(call.Method, "Delete returned IN_PROGRESS (5) but the module does not declare the async_delete capability (SPEC §4, §7)")
}

// badTerminal is the error of a TERMINAL status without a valid reason:
// a protocol violation (abi/SPEC.md §4), never written to the Machine.
func (p *Provider) badTerminal(call *hostmodule.Call) error {
	valid := make([]string, len(terminalReasons))
	for i, r := range terminalReasons {
		valid[i] = string(r)
	}
	if !call.ErrSet {
		return p.badResult(call.Method, "%s returned TERMINAL (2) without calling `set_error`: a TERMINAL status needs a reason, one of machine-controller's MachineStatusError values (%s), which the controller writes into the Machine's status.errorReason (SPEC §4)",
			call.Method, strings.Join(valid, ", "))
	}
	return p.badResult(call.Method, "%s returned TERMINAL (2) with reason %q, which is not one of machine-controller's MachineStatusError values (%s; exactly, case included) (SPEC §4)",
		call.Method, truncate(call.ErrReason, 64), strings.Join(valid, ", "))
}

// terminalReasons are machine-controller's MachineStatusError values, the
// only reasons a TERMINAL status may carry (abi/SPEC.md §4).
var terminalReasons = []clusterv1alpha1.MachineStatusError{
	clusterv1alpha1.InvalidConfigurationMachineError,
	clusterv1alpha1.UnsupportedChangeMachineError,
	clusterv1alpha1.InsufficientResourcesMachineError,
	clusterv1alpha1.CreateMachineError,
	clusterv1alpha1.UpdateMachineError,
	clusterv1alpha1.DeleteMachineError,
	clusterv1alpha1.JoinClusterTimeoutMachineError,
}

// truncate shortens a guest-provided string for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// trapError classifies an error returned by the wasm call itself.
func (p *Provider) trapError(ctx context.Context, m abi.Method, err error) error {
	var interrupted *interruptError
	if errors.As(err, &interrupted) {
		if interrupted.cause == context.DeadlineExceeded {
			p.logger.Warn("guest call exceeded its deadline; instance discarded", "method", m.String())
			return &CallError{Provider: p.name, Method: m, Class: ClassTimeout, Err: &timeoutError{cause: context.DeadlineExceeded}}
		}
		return &CallError{Provider: p.name, Method: m, Class: ClassCanceled, Err: fmt.Errorf("guest call canceled: %w", context.Canceled)}
	}
	var exit *engine.ExitError
	if errors.As(err, &exit) {
		p.logger.Warn("guest exited; instance discarded", "method", m.String(), "exitCode", exit.Code)
		return &CallError{Provider: p.name, Method: m, Class: ClassTrap, Err: fmt.Errorf("%w: guest exited with code %d", ErrTrap, exit.Code)}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return p.contextError(m, ctxErr)
	}
	trap := engineTrap{err}
	p.logger.Warn("guest trapped; instance discarded", "method", m.String(), "error", trap.Error())
	return &CallError{Provider: p.name, Method: m, Class: ClassTrap, Err: fmt.Errorf("%w: %w", ErrTrap, trap)}
}

func (p *Provider) contextError(m abi.Method, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &CallError{Provider: p.name, Method: m, Class: ClassTimeout, Err: &timeoutError{cause: err}}
	}
	if errors.Is(err, context.Canceled) {
		return &CallError{Provider: p.name, Method: m, Class: ClassCanceled, Err: err}
	}
	return &CallError{Provider: p.name, Method: m, Class: ClassTransient, Err: err}
}

// progressError is an IN_PROGRESS answer as an error (Delete returns the
// module's answer as it gave it): ErrDeletionInProgress with its note.
type progressError struct{ note string }

func (e *progressError) Error() string {
	if e.note == "" {
		return ErrDeletionInProgress.Error()
	}
	return ErrDeletionInProgress.Error() + ": " + e.note
}

func (e *progressError) Is(target error) bool { return target == ErrDeletionInProgress }

// progressOf returns the guest's note and retry hint of an IN_PROGRESS
// error.
func progressOf(err error) (note string, retryAfter time.Duration) {
	var pe *progressError
	if errors.As(err, &pe) {
		note = pe.note
	}
	var re *cloudprovidererrors.RetryableError
	if errors.As(err, &re) {
		retryAfter = re.RetryAfter
	}
	return note, retryAfter
}
