package abi

import "fmt"

// HostError is a host function's failure as a guest sees it: the function,
// its Errno (ErrnoDenied for a policy refusal, ErrnoFailed for a failed
// operation, ...) and the host's explanation read with take_result. The Go
// SDK returns it from its host calls and the native runner
// (runtime/native) returns the same type, so provider code inspecting it
// with errors.As behaves alike in both.
type HostError struct {
	Func    string
	Errno   Errno
	Message string
}

func (e *HostError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("host function %s failed with errno %d", e.Func, e.Errno)
	}
	return fmt.Sprintf("host function %s: %s", e.Func, e.Message)
}
