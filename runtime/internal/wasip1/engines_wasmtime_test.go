//go:build wasmtime

package wasip1_test

import (
	"context"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine"
)

func init() {
	engines = append(engines, testEngine{"wasmtime", func(t testing.TB) engine.Engine {
		e, err := wasmtimeengine.New("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close(context.Background()) })
		return e
	}})
}
