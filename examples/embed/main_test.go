package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

// TestRun runs the example against the fake provider built from source.
func TestRun(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := run(ctx, dir, demoMachine(), testhost.EngineOption()); err != nil {
		t.Fatal(err)
	}
	m := demoMachine()
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"cloudProvider":"nope"}`)
	if err := run(ctx, dir, m, testhost.EngineOption()); err == nil {
		t.Fatal("unknown provider: no error")
	}
}
