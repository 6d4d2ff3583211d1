package enginetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// instrumentedFiles are the instrumented modules under dir.
func instrumentedFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "wasmprov-instrumented-v*", "*", "*.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = b
	}
	return files
}

// compileCounting compiles wasm, interruptible, on a new engine with
// cacheDir, checks that the module instantiates and returns the engine's
// instrumentation hits and misses and how long Compile took.
func compileCounting(t *testing.T, newEngine NewEngine, cacheDir string, wasm []byte, cfg engine.ModuleConfig) (hits, misses int64, took time.Duration) {
	t.Helper()
	ctx := context.Background()
	e := newEngine(t, cacheDir)
	ie, ok := e.(Instrumenting)
	if !ok {
		t.Fatalf("%s engine has no instrumented cache", e.Name())
	}
	start := time.Now()
	m, err := e.Compile(ctx, wasm, cfg)
	took = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	inst, err := m.Instantiate(ctx, engine.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	inst.Close(ctx)
	hits, misses = ie.Instrumented().Stats()
	return hits, misses, took
}

// RunInstrumentationCache: an interruptible module is instrumented once
// per cache directory; another engine on the directory reads it (a hit),
// and a damaged file is a miss that is rewritten. The module compiles and
// instantiates each time.
func RunInstrumentationCache(t *testing.T, newEngine NewEngine) {
	wasm := Fixture(t, "minimal.wasm")
	dir := t.TempDir()
	want := func(hits, misses int64) {
		t.Helper()
		if h, m, _ := compileCounting(t, newEngine, dir, wasm, config(true, &recorder{})); h != hits || m != misses {
			t.Fatalf("instrumentation cache: %d hits, %d misses; want %d, %d", h, m, hits, misses)
		}
	}
	want(0, 1)
	files := instrumentedFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("instrumented files %v, want one", files)
	}
	var path string
	var good []byte
	for p, b := range files {
		path, good = p, b
	}
	want(1, 0)

	damaged := bytes.Clone(good)
	damaged[len(damaged)/2] ^= 0xff
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	want(0, 1)
	if got := instrumentedFiles(t, dir)[path]; !bytes.Equal(got, good) {
		t.Fatal("the damaged file was not rewritten")
	}
	if err := os.WriteFile(path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	want(0, 1)
	want(1, 0)

	// Without a directory, nothing is kept.
	if h, m, _ := compileCounting(t, newEngine, "", wasm, config(true, &recorder{})); h != 0 || m != 1 {
		t.Fatalf("without a cache directory: %d hits, %d misses; want 0, 1", h, m)
	}
}

// crossProcessEnv carries the cache directory to the child process of
// RunInstrumentationCacheAcrossProcesses, and crossProcessModule a module
// to compile instead of minimal.wasm (to measure a big one).
const (
	crossProcessEnv    = "WASMPROV_ENGINETEST_CACHE_DIR"
	crossProcessModule = "WASMPROV_ENGINETEST_MODULE"
)

var childReport = regexp.MustCompile(`enginetest-child: hits=(\d+) misses=(\d+) compile=(\S+)`)

// RunInstrumentationCacheAcrossProcesses: a process starting on a cache
// directory another one filled instruments nothing: its compile is a hit
// and no miss. The test binary runs itself again (os.Args[0],
// -test.run=^<t.Name()>$) as that process, with the directory in
// $WASMPROV_ENGINETEST_CACHE_DIR; it prints its counts, which this
// process checks. $WASMPROV_ENGINETEST_MODULE names a module to use instead
// of minimal.wasm (a Go guest, bound to every wasmprov_v1 function); both
// compile times are logged.
func RunInstrumentationCacheAcrossProcesses(t *testing.T, newEngine NewEngine) {
	wasm, cfg := Fixture(t, "minimal.wasm"), config(true, &recorder{})
	if p := os.Getenv(crossProcessModule); p != "" {
		var err error
		if wasm, err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		cfg = engine.ModuleConfig{MemoryLimitPages: 4096, Interruptible: true, HostFunctions: hostmodule.Functions()}
	}
	if dir := os.Getenv(crossProcessEnv); dir != "" {
		hits, misses, took := compileCounting(t, newEngine, dir, wasm, cfg)
		fmt.Printf("enginetest-child: hits=%d misses=%d compile=%s\n", hits, misses, took)
		return
	}
	dir := t.TempDir()
	if h, m, took := compileCounting(t, newEngine, dir, wasm, cfg); h != 0 || m != 1 {
		t.Fatalf("first process: %d hits, %d misses; want 0, 1", h, m)
	} else {
		t.Logf("first process, cold cache: compile %v", took)
	}

	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1")
	cmd.Env = append(os.Environ(), crossProcessEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	m := childReport.FindSubmatch(out)
	if m == nil {
		t.Fatalf("the child process reported no counts:\n%s", out)
	}
	t.Logf("second process, warm cache: compile %s", m[3])
	if string(m[1]) != "1" || string(m[2]) != "0" {
		t.Fatalf("second process: %s hits, %s misses; want 1, 0", m[1], m[2])
	}
}

// RunCheckCache: ModuleConfig.Check runs before anything reads the module
// and its output is what compiles; an interruptible module checked once
// under a CheckKey is not checked again by another engine on the cache
// directory (a warm process), while another key checks again, a refusal is
// returned unchanged and never kept, and a damaged file checks again. A
// plain module, which the instrumented cache does not keep, is checked on
// every compile.
func RunCheckCache(t *testing.T, newEngine NewEngine) {
	ctx := context.Background()
	good := Fixture(t, "minimal.wasm")
	// The engine gets bytes that are no module at all: only the check's
	// output compiles, so a compile that skipped the check without a
	// cached verdict fails.
	shipped := []byte("\x00asm but not really a module")
	errRefused := errors.New("refused by the check")
	var checks int
	checkWith := func(key string, refuse bool) engine.ModuleConfig {
		cfg := config(true, &recorder{})
		cfg.Digest = sha256.Sum256(shipped)
		cfg.CheckKey = key
		cfg.Check = func(wasm []byte) ([]byte, error) {
			checks++
			if !bytes.Equal(wasm, shipped) {
				return nil, fmt.Errorf("the check got %d other bytes", len(wasm))
			}
			if refuse {
				return nil, fmt.Errorf("%w (key %s)", errRefused, key)
			}
			return good, nil
		}
		return cfg
	}
	dir := t.TempDir()
	compile := func(cfg engine.ModuleConfig, wantChecks int) {
		t.Helper()
		checks = 0
		e := newEngine(t, dir)
		m, err := e.Compile(ctx, shipped, cfg)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		inst, err := m.Instantiate(ctx, engine.InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		inst.Close(ctx)
		m.Close(ctx)
		if checks != wantChecks {
			t.Fatalf("the check ran %d times, want %d", checks, wantChecks)
		}
	}
	compile(checkWith("a", false), 1)
	compile(checkWith("a", false), 0) // a warm process: no check
	compile(checkWith("b", false), 1) // other limits: checked again
	compile(checkWith("b", false), 0)

	refuse := func() {
		t.Helper()
		checks = 0
		_, err := newEngine(t, dir).Compile(ctx, shipped, checkWith("c", true))
		if !errors.Is(err, errRefused) || err.Error() != "refused by the check (key c)" {
			t.Fatalf("a refused module: %v; want the check's error unchanged", err)
		}
		if checks != 1 {
			t.Fatalf("the refusing check ran %d times, want 1", checks)
		}
	}
	refuse()
	refuse() // a refusal is not kept

	files := instrumentedFiles(t, dir)
	if len(files) != 2 {
		t.Fatalf("instrumented files %v; want one for key a and one for b", slices.Sorted(maps.Keys(files)))
	}
	sum := sha256.Sum256(shipped)
	for path, b := range files {
		if !strings.Contains(filepath.Base(path), hex.EncodeToString(sum[:])) {
			t.Fatalf("%s is not named by the digest of the shipped module", path)
		}
		damaged := bytes.Clone(b)
		damaged[len(damaged)-1] ^= 0xff
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	compile(checkWith("a", false), 1) // damaged: a miss, checked again
	compile(checkWith("a", false), 0) // and rewritten

	// A plain module is checked on every compile.
	plain := checkWith("a", false)
	plain.Interruptible = false
	compile(plain, 1)
	compile(plain, 1)
}
