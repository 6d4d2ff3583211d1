package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

func TestEngineSelection(t *testing.T) {
	ctx := context.Background()
	if _, err := runtime.New(runtime.WithEngine("v8")); !errors.Is(err, runtime.ErrEngineUnavailable) {
		t.Fatalf("unknown engine: got %v, want ErrEngineUnavailable", err)
	}
	if !slices.Contains(runtime.Engines(), runtime.EngineWazero) {
		t.Fatalf("Engines() = %v lacks wazero", runtime.Engines())
	}
	for _, e := range runtime.Engines() {
		rt, err := runtime.New(runtime.WithEngine(e))
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
		if err := cloud.SeedProvider(p, nil).Validate(newMachine("m", "u", map[string]any{}).Spec); err != nil {
			t.Errorf("%s: Validate: %v", e, err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("%s: Close: %v", e, err)
		}
	}
	// The runtime never reads $WASMPROV_ENGINE: without WithEngine it is
	// wazero whatever the environment says, so no variable in an
	// embedder's environment changes the engine under untrusted code.
	t.Setenv(runtime.EngineEnv, string(runtime.EngineWasmtime))
	rt, err := runtime.New()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if rt.Engine() != runtime.EngineWazero {
		t.Fatalf("New() with %s=wasmtime runs %q, want wazero", runtime.EngineEnv, rt.Engine())
	}
}

// TestSuiteEngine checks that the suite runs on the engine $WASMPROV_ENGINE
// names, so `make test-wasmtime` cannot silently test wazero.
func TestSuiteEngine(t *testing.T) {
	want := testhost.Engine()
	if want == "" {
		want = runtime.EngineWazero
	}
	if rt := newRuntime(t); rt.Engine() != want {
		t.Fatalf("suite runtime on %q, want %q", rt.Engine(), want)
	}
}
