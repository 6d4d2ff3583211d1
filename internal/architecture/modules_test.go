package architecture_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"

	"golang.org/x/mod/semver"
)

// hostModules are the modules beside the main (embedder) one that hold
// the host's own programs and libraries (docs/ARCHITECTURE.md, "Modules").
var hostModules = []string{"controller", "runtime/signature", "cmd/wasmprov", "internal/testing/testregistry/registryd"}

// The modules beside the main one that CI builds in the same build cache,
// the build tags it builds them with, and the module whose versions they
// must build ("" is the main one). Sigstore needs newer golang.org/x
// modules than the oldest the main module supports (machine-controller's,
// cmd/wasmprov's TestMachineControllerDropIn), so the modules
// that link it (the CLI, runtime/signature, e2e) build the CLI's: the
// packages they share with the main module compile twice, once per set.
//
// newer lists the modules a nested module may build at a newer version
// than its reference, because a dependency it cannot do without requires
// it: e2e runs Cluster API's own controllers, and Cluster API v1.14 needs
// Kubernetes v0.36.3 (and newer gRPC, x/text, x/crypto...) while the
// main module stays at machine-controller's v0.36.2. The e2e test binary
// compiles those modules a second time; the wasmprov binary it starts is
// built from cmd/wasmprov, at the CLI's versions, as users get it.
var nestedModules = []struct {
	dir, tags, ref string
	newer          []string
}{
	{"bench", "wasmtime", "", nil},
	{"e2e", "e2e", "cmd/wasmprov", []string{"k8s.io/", "sigs.k8s.io/structured-merge-diff/", "google.golang.org/grpc",
		"google.golang.org/genproto/", "golang.org/x/text", "golang.org/x/crypto", "gomodules.xyz/jsonpatch/"}},
	{"examples/ipam", "", "", nil},
	{"examples/digitalocean", "", "", nil},
	{"controller", "", "", nil},
	{"runtime/signature", "", "cmd/wasmprov", nil},
}

// allowedNewer reports whether module path may be built at v, newer than
// the reference's ref, in a nested module (its newer list).
func allowedNewer(newer []string, path, v, ref string) bool {
	if semver.Compare(v, ref) <= 0 {
		return false
	}
	for _, p := range newer {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// TestNestedModulesBuildTheMainModulesVersions: a module CI builds beside
// the main one (the benchmarks, e2e, the examples) must build every
// dependency they share at the main module's version. One differing
// module low in the graph recompiles everything above it: the bench
// module's newer golang.org/x/net (pulled in by a newer gRPC) had every
// package from apimachinery to the runtime compiled a second time in
// bench-smoke.
func TestNestedModulesBuildTheMainModulesVersions(t *testing.T) {
	root := testguest.Root()
	refs := map[string]map[string]string{}
	for _, m := range nestedModules {
		main, ok := refs[m.ref]
		if !ok {
			main = builtModules(t, filepath.Join(root, m.ref), "")
			refs[m.ref] = main
		}
		name := "the main module"
		if m.ref != "" {
			name = m.ref
		}
		for path, v := range builtModules(t, filepath.Join(root, m.dir), m.tags) {
			if mv, ok := main[path]; ok && mv != v && !strings.HasPrefix(path, "github.com/wasmprov/wasmprov") && !allowedNewer(m.newer, path, v, mv) {
				t.Errorf("%s builds %s %s, %s %s: every package above it compiles twice; "+
					"fix: cd %s && go get %s@%s && go mod tidy (or move %s to %s)", m.dir, path, v, name, mv, m.dir, path, mv, name, v)
			}
		}
	}
}

// builtModules lists the module versions of the packages the module in
// dir builds for its tests: go list -deps -test ./... .
func builtModules(t *testing.T, dir, tags string) map[string]string {
	t.Helper()
	args := []string{"list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = dir
	// -mod=readonly whatever GOFLAGS says: the test reads go.mod files,
	// never writes them; GOPROXY=off: it downloads nothing either (make
	// modules does, before make test).
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s\nfix: make modules (downloads every module's dependencies)", dir, err, stderr.String())
	}
	mods := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, v, ok := strings.Cut(sc.Text(), " "); ok {
			mods[path] = v
		}
	}
	return mods
}
