package wasmbin

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error: the bytes are not a
// WebAssembly binary this package can decode.
var ErrMalformed = errors.New("malformed WebAssembly binary")

// Error is a decoding error at a byte offset.
type Error struct {
	// Offset is where in the module decoding stopped (relative to the
	// start of the module when the reader was given the module's offsets).
	Offset int
	// Msg says what was wrong.
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: at offset 0x%x: %s", ErrMalformed, e.Offset, e.Msg)
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *Error) Unwrap() error { return ErrMalformed }

// Errorf returns an *Error at offset.
func Errorf(offset int, format string, args ...any) error {
	return &Error{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}
