package testguest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/race"
)

// PrecompileEnv names the precompile helper (internal/testing/testhost/
// precompile, a test binary built without -race) that make test gives
// the race group.
const PrecompileEnv = "WASMPROV_TEST_PRECOMPILE"

// precompile has the program $PrecompileEnv compile the guest wasm into
// CompilationCacheDir, when this test binary runs under the race
// detector: compiling it there is about ten times faster than in this
// process, and the test then finds it compiled (the helper does nothing
// on an engine other than wazero). Without the program (a
// plain go test) the test compiles the guest itself, as before. Called
// with mu held, once per guest per test binary.
func precompile(tb testing.TB, wasm string) {
	tool := os.Getenv(PrecompileEnv)
	if tool == "" || !race.Enabled {
		return
	}
	cmd := exec.Command(tool, "-cache", CompilationCacheDir(tb), wasm)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("%s %s: %v\n%s (unset %s to compile in the test)", tool, wasm, err, b, PrecompileEnv)
	}
}
