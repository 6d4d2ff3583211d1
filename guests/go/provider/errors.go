package provider

import (
	"github.com/wasmprov/wasmprov/abi"

	"errors"
	"fmt"
	"time"
)

// ErrInstanceNotFound is returned by Get (and may be by others) when the
// cloud has no instance for the Machine. The host turns it into
// machine-controller's ErrInstanceNotFound.
var ErrInstanceNotFound = errors.New("instance not found")

// MachineStatusError is the reason of a terminal error, written by the
// controller into the Machine's status.errorReason.
type MachineStatusError string

// The reasons machine-controller defines.
const (
	InvalidConfiguration    MachineStatusError = "InvalidConfiguration"
	UnsupportedChange       MachineStatusError = "UnsupportedChange"
	InsufficientResources   MachineStatusError = "InsufficientResources"
	CreateMachineError      MachineStatusError = "CreateError"
	UpdateMachineError      MachineStatusError = "UpdateError"
	DeleteMachineError      MachineStatusError = "DeleteError"
	JoinClusterTimeoutError MachineStatusError = "JoinClusterTimeoutError"
)

// TerminalError is an error that needs a person to fix it; the controller
// stops retrying and reports Reason and Message in the Machine's status.
type TerminalError struct {
	Reason  MachineStatusError
	Message string
}

func (e *TerminalError) Error() string {
	return fmt.Sprintf("An error of type = %v, with message = %v occurred", e.Reason, e.Message)
}

// Terminal returns a *TerminalError with a formatted message.
func Terminal(reason MachineStatusError, format string, args ...any) error {
	return &TerminalError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// RetryableError is a transient error with a hint of when to retry (e.g. a
// cloud API's Retry-After). Any other non-terminal error is retried too, on
// the controller's own schedule.
type RetryableError struct {
	RetryAfter time.Duration
	Err        error
}

// Error returns the underlying error's message; the host adds the retry
// hint when it reports the error.
func (e *RetryableError) Error() string { return e.Err.Error() }

func (e *RetryableError) Unwrap() error { return e.Err }

// HostError is a failure of a host function: the Errno tells its class
// (abi.ErrnoDenied for a policy refusal, abi.ErrnoFailed for a failed
// operation, ...) and Message is the host's explanation. It is abi's type,
// so the native runner (runtime/native) returns the very same one.
type HostError = abi.HostError
