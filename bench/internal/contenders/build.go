package contenders

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
)

// Root is the bench module's root directory.
func Root() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CacheDir is where built guests, plugins and compilation caches live:
// $WASMPROV_BENCH_CACHE, else <user cache>/wasmprov-bench.
func CacheDir() string {
	dir := os.Getenv("WASMPROV_BENCH_CACHE")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "wasmprov-bench")
	}
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// PrebuiltEnv, when set, makes Build return the paths its parent process
// built instead of building.
const PrebuiltEnv = "WASMPROV_BENCH_PREBUILT"

// Artifacts built from this module.
const (
	WasmprovGuest = "guests/wasmprov" // wasip1 c-shared, the wasmprov SDK guest
	ExtismGuest   = "guests/extism"   // wasip1 c-shared, Extism ABI
	GoPluginBin   = "guests/goplugin" // host binary, go-plugin plugin
	ColdStart     = "cmd/coldstart"   // host binary, the subprocess probe
	ProbeGuest    = "guests/probe"    // wasip1 c-shared, Validate in pieces
	// WasmprovGuestJSONHTTP is WasmprovGuest built with -tags
	// benchjsonhttp: its HTTP goes through http_do's JSON instead of
	// http_do_bin (BenchmarkCreateHTTPFraming).
	WasmprovGuestJSONHTTP = WasmprovGuest + "+benchjsonhttp"
)

// Build compiles pkg (relative to the bench module) once per process and
// returns the output path. Guests are built with the standard toolchain:
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared. cmd/coldstart is built with
// the build tags this binary has (HostTags), to a path naming them. A pkg
// of the form "dir+tag" is dir built with the extra build tag tag.
func Build(pkg string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	key := pkg
	if p, ok := built[key]; ok {
		return p, nil
	}
	// pkg+tag: the package built with one more build tag, to its own file.
	pkg, variant, _ := strings.Cut(pkg, "+")
	wasm := pkg == WasmprovGuest || pkg == ExtismGuest || pkg == ProbeGuest
	out := filepath.Join(CacheDir(), "bin", filepath.Base(pkg))
	var tags []string
	if variant != "" {
		tags = append(tags, variant)
		out += "-" + variant
	}
	if wasm {
		out += ".wasm"
	}
	if pkg == ColdStart {
		tags = HostTags()
		if len(tags) > 0 {
			out += "-" + strings.Join(tags, "-")
		}
	}
	// A subprocess started by the benchmarks uses what its parent built.
	if os.Getenv(PrebuiltEnv) != "" {
		built[key] = out
		return out, nil
	}
	// Guests are built with -trimpath, reproducible wherever they are
	// built; host binaries without, like the test binary that builds them,
	// so that the packages they share (the runtime, wazero, wasmtime-go,
	// gRPC) come from the build cache instead of compiling again.
	args := []string{"build", "-o"}
	env := os.Environ()
	if wasm {
		args = append(args, out, "-trimpath", "-buildmode=c-shared")
		env = append(env, "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	} else {
		args = append(args, out)
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
		if slices.Contains(tags, "wasmtime") {
			env = append(env, "CGO_ENABLED=1") // wasmtime-go is cgo
		}
	}
	args = append(args, "./"+pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = Root()
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, b)
	}
	built[key] = out
	return out, nil
}

// HostTags are the build tags of this binary that cmd/coldstart is built
// with too ("wasmtime" when built with -tags wasmtime), so the subprocess
// can run every contender this binary can.
func HostTags() []string { return slices.Clone(hostTags) }
