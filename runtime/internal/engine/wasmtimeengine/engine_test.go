//go:build wasmtime

package wasmtimeengine_test

import (
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine/enginetest"
)

// The engine suite (package enginetest) on wasmtime. The cache test across
// processes is the acceptance test of issue 13: a process with a warm
// cache does not instrument the module again.

func TestCompile(t *testing.T) { enginetest.RunCompile(t, enginetest.NewWasmtime) }
func TestInstrumentationCache(t *testing.T) {
	enginetest.RunInstrumentationCache(t, enginetest.NewWasmtime)
}
func TestCheckCache(t *testing.T) { enginetest.RunCheckCache(t, enginetest.NewWasmtime) }
func TestInstrumentationCacheAcrossProcesses(t *testing.T) {
	enginetest.RunInstrumentationCacheAcrossProcesses(t, enginetest.NewWasmtime)
}
func TestInstantiate(t *testing.T) { enginetest.RunInstantiate(t, enginetest.NewWasmtime) }
func TestCall(t *testing.T)        { enginetest.RunCall(t, enginetest.NewWasmtime) }
func TestInterrupt(t *testing.T)   { enginetest.RunInterrupt(t, enginetest.NewWasmtime) }
