package runtime_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/wasmprov/wasmprov/runtime"
)

func TestEngineSelection(t *testing.T) {
	ctx := context.Background()
	if _, err := runtime.New(ctx, runtime.WithEngine("v8")); !errors.Is(err, runtime.ErrEngineUnavailable) {
		t.Fatalf("unknown engine: got %v, want ErrEngineUnavailable", err)
	}
	if !slices.Contains(runtime.Engines(), runtime.EngineWazero) {
		t.Fatalf("Engines() = %v lacks wazero", runtime.Engines())
	}
	for _, e := range runtime.Engines() {
		rt, err := runtime.New(ctx, runtime.WithEngine(e))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if rt.Engine() != e {
			t.Errorf("Engine() = %q, want %q", rt.Engine(), e)
		}
		p, err := rt.LoadBytes(ctx, "minimal", readFixture(t, "minimal"))
		if err != nil {
			t.Fatalf("%s: loading: %v", e, err)
		}
		if err := p.Validate(newMachine("m", "u", map[string]any{}).Spec); err != nil {
			t.Errorf("%s: Validate: %v", e, err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("%s: Close: %v", e, err)
		}
	}
	// The suite runs on the engine $WASMPROV_ENGINE names: make sure it is
	// the one in use, so `make test-wasmtime` cannot silently test wazero.
	rt := newRuntime(t)
	want := runtime.Engine(os.Getenv(runtime.EngineEnv))
	if want == "" {
		want = runtime.EngineWazero
	}
	if rt.Engine() != want {
		t.Fatalf("default engine %q, want %q", rt.Engine(), want)
	}
}
