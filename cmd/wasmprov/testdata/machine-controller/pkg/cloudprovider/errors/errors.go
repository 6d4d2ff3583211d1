// Package errors holds the error values the controller acts on.
package errors

import (
	"errors"
	"fmt"

	"k8c.io/machine-controller/sdk/apis/cluster/common"
)

// ErrInstanceNotFound is returned when the cloud has no instance for a
// Machine.
var ErrInstanceNotFound = errors.New("instance not found")

// IsNotFound reports whether err is, or wraps, ErrInstanceNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrInstanceNotFound) }

// TerminalError needs manual interaction: the controller records it and
// stops retrying.
type TerminalError struct {
	Reason  common.MachineStatusError
	Message string
}

func (te TerminalError) Error() string {
	return fmt.Sprintf("terminal error %s: %s", te.Reason, te.Message)
}

// IsTerminalError finds a TerminalError value in err's chain.
func IsTerminalError(err error) (bool, common.MachineStatusError, string) {
	var te TerminalError
	if !errors.As(err, &te) {
		return false, "", ""
	}
	return true, te.Reason, te.Message
}
