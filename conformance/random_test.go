package conformance_test

import (
	"os"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
)

// sandbox.random-per-instance passes on this runtime (both engines: the
// test-wasmtime job runs this package on wasmtime), and fails for a probe
// that draws a fixed stream, as a host without real randomness would give
// every instance.
func TestRandomPerInstance(t *testing.T) {
	cfg := refConfig(t, "conformance/testdata/refcloud")
	cfg.Checks = []string{"sandbox.random-per-instance"}
	conformance.RunT(t, cfg)

	fixed, err := os.ReadFile("internal/randprobe/fixed.wasm")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.Run(t.Context(), conformance.WithRandomProbe(cfg, fixed))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Result("sandbox.random-per-instance")
	if r.Status != conformance.Fail || !strings.Contains(r.Message, "same 16 bytes") {
		t.Fatalf("a fixed random stream was not caught:\n%s", text(rep))
	}
}
