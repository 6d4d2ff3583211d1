package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/guesttext"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// Sentinel errors for failures that belong to the sandbox rather than to
// the provider's logic. They are wrapped in a *CallError; test with
// errors.Is.
var (
	// ErrTrap: the guest trapped (unreachable, out-of-bounds access, stack
	// overflow, exited). The instance was discarded.
	ErrTrap = errors.New("guest trapped")
	// ErrGuestPanic: the guest recovered a panic and reported it. The
	// instance was discarded.
	ErrGuestPanic = errors.New("guest panicked")
	// ErrDeletionInProgress: the module's Delete reported IN_PROGRESS —
	// deletion started and is not finished. Cleanup answers it as
	// (false, nil); Delete returns it as the module gave it.
	ErrDeletionInProgress = provider.ErrDeletionInProgress
	// ErrBadResult: the guest returned something the ABI does not allow: an
	// unknown status, an output that does not decode.
	ErrBadResult = errors.New("guest returned an invalid result")
	// ErrTimeout: the call's deadline passed while the guest ran. The
	// instance was discarded. The error also matches
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("guest call timed out")
	// ErrProviderClosed: the provider was closed (unloaded or replaced by a
	// reload) before the call got an instance. Nothing ran; a caller holding
	// a stale *Provider may retry on the current one.
	ErrProviderClosed = errors.New("provider is closed")
	// ErrInvalidModule: a module failed load-time validation: the host's
	// own checks or the engine's (one sentinel, the engine's, for both).
	ErrInvalidModule = engine.ErrInvalidModule
	// ErrLoadTimeout: compiling the module or starting an instance of it
	// (instantiation, _initialize, the ABI exports) outlived the load
	// deadline: the caller's, or the policy's LoadTimeout. It also matches
	// context.DeadlineExceeded.
	ErrLoadTimeout = errors.New("loading the provider module timed out")
)

// Class names the kind of a call failure, for metrics and logs.
type Class string

// Failure classes.
const (
	ClassTerminal  Class = "terminal"
	ClassNotFound  Class = "not-found"
	ClassTransient Class = "transient"
	ClassTrap      Class = "trap"
	ClassTimeout   Class = "timeout"
	ClassCanceled  Class = "canceled"
	ClassBadResult Class = "bad-result"
)

// CallError is the error of a failed provider call. Its message names the
// provider and method; Unwrap exposes the cause, so
// cloudprovidererrors.IsTerminalError, IsNotFound and errors.Is(err,
// ErrTrap) all see through it.
type CallError struct {
	Provider string
	Method   abi.Method
	Class    Class
	Err      error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("provider %q: %s: %v", e.Provider, e.Method, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// ErrorClass returns the class of err if it is a *CallError, else "".
func ErrorClass(err error) Class {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Class
	}
	return ""
}

// loadTimeoutError is ErrLoadTimeout that also matches the context's error.
type loadTimeoutError struct {
	stage string
	cause error
}

func (e *loadTimeoutError) Error() string {
	return fmt.Sprintf("%v while %s: %v", ErrLoadTimeout, e.stage, e.cause)
}

func (e *loadTimeoutError) Is(target error) bool { return target == ErrLoadTimeout }
func (e *loadTimeoutError) Unwrap() error        { return e.cause }

// loadDeadline turns err into ErrLoadTimeout when ctx's deadline is what
// ended the stage of loading.
func loadDeadline(ctx context.Context, stage string, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &loadTimeoutError{stage: stage, cause: context.DeadlineExceeded}
	}
	return err
}

// timeoutError is ErrTimeout that also matches the context's error.
type timeoutError struct{ cause error }

func (e *timeoutError) Error() string { return fmt.Sprintf("%v: %v", ErrTimeout, e.cause) }

func (e *timeoutError) Is(target error) bool { return target == ErrTimeout }

func (e *timeoutError) Unwrap() error { return e.cause }

// engineTrap is an engine's trap error as the runtime passes it on: its
// text is made printable, because an engine quotes what the module names —
// wazero's stack trace prints the function names of the module's name
// section, which a hostile module fills with terminal escapes — and the
// text reaches logs, Events and status. errors.Is and errors.As still see
// the engine's error.
type engineTrap struct{ err error }

func (e engineTrap) Error() string { return guesttext.Printable(e.err.Error()) }
func (e engineTrap) Unwrap() error { return e.err }
