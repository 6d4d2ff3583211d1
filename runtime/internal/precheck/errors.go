package precheck

import (
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

var (
	// ErrRejected is wrapped by every *Rejection: the module decodes, but
	// exceeds a limit or uses something the host refuses.
	ErrRejected = errors.New("module rejected")
	// ErrMalformed is wrapped by every error about a module that does not
	// decode, or whose sections disagree (counts, indices): it is
	// wasmbin.ErrMalformed.
	ErrMalformed = wasmbin.ErrMalformed
)

// Rejection says why Check refused a module.
type Rejection struct {
	// Limit is the name of the Limits field exceeded ("MaxLocals"), or
	// for a refusal that is not a number, a name for the rule
	// ("NoStartSection", "FunctionImportsOnly", "NoSharedMemory",
	// "NoMemory64", "SingleMemory", "NoTable64", "NoRefFuncInCode").
	Limit string
	// Value is what the module has, Max the limit (both 0 for a rule).
	Value, Max uint64
	// Where says where: "function 12 (body at offset 0x1234)", "the
	// module", "import 3 (at offset 0x2a)".
	Where string
	// Offset is the byte offset in the module Where points at.
	Offset int
	// What is the finding ("declares 4294967295 locals"); for a rule, the
	// whole reason.
	What string
}

func (e *Rejection) Error() string {
	if e.Max == 0 && e.Value == 0 {
		return fmt.Sprintf("%s: %s %s (rule %s)", ErrRejected, e.Where, e.What, e.Limit)
	}
	return fmt.Sprintf("%s: %s %s; limit %s = %d", ErrRejected, e.Where, e.What, e.Limit, e.Max)
}

// Unwrap makes errors.Is(err, ErrRejected) hold.
func (e *Rejection) Unwrap() error { return ErrRejected }

func malformed(offset int, format string, args ...any) error {
	return wasmbin.Errorf(offset, format, args...)
}
