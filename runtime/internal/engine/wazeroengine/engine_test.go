package wazeroengine_test

import (
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine/enginetest"
)

// The engine suite (package enginetest) on wazero.

func TestCompile(t *testing.T) { enginetest.RunCompile(t, enginetest.NewWazero) }
func TestInstrumentationCache(t *testing.T) {
	enginetest.RunInstrumentationCache(t, enginetest.NewWazero)
}
func TestCheckCache(t *testing.T) { enginetest.RunCheckCache(t, enginetest.NewWazero) }
func TestInstrumentationCacheAcrossProcesses(t *testing.T) {
	enginetest.RunInstrumentationCacheAcrossProcesses(t, enginetest.NewWazero)
}
func TestInstantiate(t *testing.T) { enginetest.RunInstantiate(t, enginetest.NewWazero) }
func TestCall(t *testing.T)        { enginetest.RunCall(t, enginetest.NewWazero) }
func TestInterrupt(t *testing.T)   { enginetest.RunInterrupt(t, enginetest.NewWazero) }
