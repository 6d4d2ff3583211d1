package testguest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildWith is Build with linker flags, e.g. "-X main.Version=v2", so one
// guest source yields distinguishable modules. Builds are memoised per test
// binary by (dir, ldflags).
func BuildWith(tb testing.TB, dir, ldflags string) string {
	tb.Helper()
	key := dir + "\x00" + ldflags
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[key]; ok {
		return p
	}
	sum := sha256.Sum256([]byte(ldflags))
	out := filepath.Join(CacheDir(tb), "guests",
		strings.ReplaceAll(dir, "/", "_")+"-"+hex.EncodeToString(sum[:6]), filepath.Base(dir)+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags", ldflags, "-o", out, ".")
	cmd.Dir = filepath.Join(Root(), dir)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building guest %s with %q: %v\n%s", dir, ldflags, err, b)
	}
	precompile(tb, out)
	built[key] = out
	return out
}
