package wasip1_test

import (
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/enginetest"
)

// testEngine is an engine the tests run package wasip1 on.
type testEngine struct {
	name string
	new  func(t testing.TB) engine.Engine
}

// engines are enginetest's: wazero and, with the build tag, wasmtime, each
// with no cache directory.
var engines = func() []testEngine {
	var out []testEngine
	for _, e := range enginetest.Engines() {
		out = append(out, testEngine{e.Name, func(t testing.TB) engine.Engine { return e.New(t, "") }})
	}
	return out
}()
