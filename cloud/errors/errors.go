// Package errors is machine-controller's pkg/cloudprovider/errors: the error
// values whose meaning the controller acts on. Import it as
// cloudprovidererrors, as machine-controller does, to keep the standard
// library's errors package in reach.
//
// Unlike upstream, every test here goes through errors.Is/As, so the
// semantics survive wrapping with fmt.Errorf("...: %w", err) — which the
// wasm runtime does to name the provider and method of a failed call.
package errors

import (
	"errors"
	"fmt"
	"time"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// ErrInstanceNotFound tells that the requested instance was not found on the cloud provider
var ErrInstanceNotFound = errors.New("instance not found")

// TerminalError is a helper struct that holds errors of type "terminal"
//
// A terminal error indicates that a manual interaction is required: the
// controller writes Reason and Message into the Machine's status and stops
// retrying.
type TerminalError struct {
	Reason  v1alpha1.MachineStatusError
	Message string
}

func (te TerminalError) Error() string {
	return fmt.Sprintf("An error of type = %v, with message = %v occurred", te.Reason, te.Message)
}

// IsTerminalError is a helper function that helps to determine if a given
// error is terminal; it looks through wrapped errors.
func IsTerminalError(err error) (bool, v1alpha1.MachineStatusError, string) {
	var te TerminalError
	if errors.As(err, &te) {
		return true, te.Reason, te.Message
	}
	var pte *TerminalError
	if errors.As(err, &pte) && pte != nil {
		return true, pte.Reason, pte.Message
	}
	return false, "", ""
}

// IsNotFound reports whether err is, or wraps, ErrInstanceNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrInstanceNotFound) }

// RetryableError is a transient failure with a hint of when to try again,
// e.g. a cloud API answering 429 with Retry-After. It is not terminal: the
// controller requeues, after RetryAfter when it is set.
type RetryableError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *RetryableError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (retry after %s)", e.Err, e.RetryAfter)
	}
	return e.Err.Error()
}

func (e *RetryableError) Unwrap() error { return e.Err }

// RetryAfter returns the retry hint carried by err, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var re *RetryableError
	if errors.As(err, &re) && re.RetryAfter > 0 {
		return re.RetryAfter, true
	}
	return 0, false
}
