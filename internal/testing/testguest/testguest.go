// Package testguest builds guest modules from source for tests, so every
// test runs the .wasm compiled from the code in the same checkout — never a
// stale binary.
package testguest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Build compiles the Go guest in dir (relative to the repository root, e.g.
// "examples/fake") with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and
// returns the path of the .wasm. Builds are memoised per test binary; the Go
// build cache makes rebuilds across binaries cheap.
func Build(tb testing.TB, dir string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[dir]; ok {
		return p
	}
	out := filepath.Join(CacheDir(tb), "guests", strings.ReplaceAll(dir, "/", "_"), filepath.Base(dir)+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = filepath.Join(Root(), dir)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building guest %s: %v\n%s", dir, err, b)
	}
	precompile(tb, out)
	built[dir] = out
	return out
}

// CacheDir is where tests keep built guests and wazero's compilation cache:
// $WASMPROV_TEST_CACHE, else the user cache directory. Reusing it across
// runs makes a warm test run compile nothing.
func CacheDir(tb testing.TB) string {
	dir := os.Getenv("WASMPROV_TEST_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "wasmprov-test")
	}
	if err := os.MkdirAll(filepath.Join(dir, "guests"), 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// CompilationCacheDir is the wazero compilation cache directory for tests.
func CompilationCacheDir(tb testing.TB) string {
	return filepath.Join(CacheDir(tb), "wazero")
}
