package wasip1_test

import (
	"context"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wazeroengine"
)

// testEngine is an engine the tests run package wasip1 on.
type testEngine struct {
	name string
	new  func(t testing.TB) engine.Engine
}

// engines are wazero and, with the build tag, wasmtime
// (engines_wasmtime_test.go).
var engines = []testEngine{{"wazero", func(t testing.TB) engine.Engine {
	e, err := wazeroengine.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}}}
