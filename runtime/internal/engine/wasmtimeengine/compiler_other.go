//go:build wasmtime && !linux

package wasmtimeengine

import (
	"context"
	"errors"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

// compilerPath is "": a compiler process (and its memory limit) is only
// implemented on Linux, so elsewhere the engine compiles in process.
func compilerPath() string { return "" }

func (e *Engine) compileInChild(context.Context, []byte) (*wasmtime.Module, []byte, error) {
	return nil, nil, errors.New("compiling module: no compiler process on this platform")
}
