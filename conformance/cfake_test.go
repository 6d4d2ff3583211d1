package conformance_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/internal/testhost"
)

// buildCFake compiles examples/c-fake with its build.sh (clang + wasi-libc).
func buildCFake(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		t.Fatalf("clang is needed to build examples/c-fake (Debian: clang lld wasi-libc libclang-rt-dev-wasm32): %v", err)
	}
	out := filepath.Join(t.TempDir(), "c-fake.wasm")
	cmd := exec.Command(filepath.Join(testguest.Root(), "examples", "c-fake", "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building examples/c-fake: %v\n%s", err, b)
	}
	return out
}

// The C guest, written from abi/SPEC.md without the Go SDK, passes the same
// suite as the Go fake, with ten times the fuzzing (it is cheap).
func TestCFake(t *testing.T) {
	conformance.RunT(t, conformance.Config{
		Module:              buildCFake(t),
		ProviderSpec:        json.RawMessage(fakeSpec),
		Profile:             conformance.ProfileStateless,
		FuzzMachines:        240,
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
	})
}
