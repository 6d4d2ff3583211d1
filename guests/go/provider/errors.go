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

// ErrDeletionInProgress says that Delete has started deleting the instance
// and has not finished: the controller calls Delete again later, and the
// deletion counts as done only when Delete returns nil. Return it from
// Delete through DeletionInProgress (or wrap it) instead of waiting inside
// the call for a cloud that deletes asynchronously.
//
// It becomes the ABI's IN_PROGRESS status only for a provider registered
// with AsyncDelete: a host that predates IN_PROGRESS refuses such a module
// at load, so the module never meets one that would misread the status.
// Without AsyncDelete, and from any method but Delete, it is reported as a
// retriable error carrying the same message and retry hint, which is what
// a provider written before IN_PROGRESS returned in the same situation.
var ErrDeletionInProgress = errors.New("deletion in progress")

// DeletionInProgressError is the error DeletionInProgress returns: a
// progress note for the controller's log and the Machine's events, and
// when to call Delete again (0: the controller's own schedule). It matches
// ErrDeletionInProgress with errors.Is.
type DeletionInProgressError struct {
	RetryAfter time.Duration
	Message    string
}

func (e *DeletionInProgressError) Error() string {
	if e.Message == "" {
		return ErrDeletionInProgress.Error()
	}
	return ErrDeletionInProgress.Error() + ": " + e.Message
}

// Is makes errors.Is(err, ErrDeletionInProgress) true.
func (e *DeletionInProgressError) Is(target error) bool { return target == ErrDeletionInProgress }

// DeletionInProgress returns a *DeletionInProgressError: Delete has
// started and the controller should call it again after retryAfter. The
// formatted message is a progress note such as "server 42 is deleting".
func DeletionInProgress(retryAfter time.Duration, format string, args ...any) error {
	return &DeletionInProgressError{RetryAfter: retryAfter, Message: fmt.Sprintf(format, args...)}
}
