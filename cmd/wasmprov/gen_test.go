package main

import (
	"bytes"
	"encoding/json"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/internal/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

// The generated file says it is generated and by what, is gofmt'ed, and
// carries the provider's names.
func TestGenMCAdapterOutput(t *testing.T) {
	code, out, errOut := runCLI(t, "gen", "machine-controller-adapter", "--provider", "acme-wasm", "--module", "/srv/acme.wasm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).MatchString(first) ||
		!strings.Contains(first, `"wasmprov gen machine-controller-adapter --provider acme-wasm --module /srv/acme.wasm"`) {
		t.Errorf("header %q", first)
	}
	formatted, err := format.Source([]byte(out))
	if err != nil || !bytes.Equal(formatted, []byte(out)) {
		t.Errorf("output is not gofmt'ed (%v)", err)
	}
	for _, want := range []string{
		"package acmewasm\n",
		`CloudProvider providerconfig.CloudProvider = "acme-wasm"`,
		`ModuleEnv = "WASMPROV_ACME_WASM_MODULE"`,
		`DefaultModule = "/srv/acme.wasm"`,
		`PolicyEnv = "WASMPROV_ACME_WASM_POLICY"`,
		`engine = wasmruntime.Engine("wazero")`,
		"func New(cvr providerconfig.ConfigVarResolver) cloudprovidertypes.Provider {",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestGenMCAdapterFlags(t *testing.T) {
	for _, args := range [][]string{
		{"gen"},
		{"gen", "nosuchgenerator"},
		{"gen", "machine-controller-adapter"},
		{"gen", "machine-controller-adapter", "--provider", "Bad_Name"},
		{"gen", "machine-controller-adapter", "--provider", "ok", "--package", "not-a-name"},
		{"gen", "machine-controller-adapter", "--provider", "ok", "--engine", "v8"},
		{"gen", "machine-controller-adapter", "--provider", "ok", "extra"},
	} {
		if code, out, _ := runCLI(t, args...); code == 0 || out != "" {
			t.Errorf("wasmprov %s: exit %d, stdout %q; want a failure and nothing on stdout", strings.Join(args, " "), code, out)
		}
	}
	for _, args := range [][]string{{"gen", "--help"}, {"gen", "machine-controller-adapter", "--help"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || !strings.Contains(out, "usage: wasmprov gen") {
			t.Errorf("wasmprov %s: exit %d, stdout %q", strings.Join(args, " "), code, out)
		}
	}
}

// TestMachineControllerDropIn is the acceptance test of the generator: in
// a copy of an upstream-shaped machine-controller tree (testdata), the one
// generated file plus the one entry of the providers map give a provider
// that builds, vets, and runs the Hetzner guest through machine-
// controller's own types against the API simulator.
func TestMachineControllerDropIn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and tests a second Go module (about a minute warm)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the drop-in test needs the go command: %v", err)
	}
	root, err := filepath.Abs(testguest.Root())
	if err != nil {
		t.Fatal(err)
	}
	wasm := testguest.Build(t, "examples/hetzner")

	dir := filepath.Join(t.TempDir(), "machine-controller")
	copyTree(t, filepath.Join("testdata", "machine-controller"), dir)
	gomod := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	const rel = "github.com/wasmprov/wasmprov => ../../../.."
	if !bytes.Contains(b, []byte(rel)) {
		t.Fatalf("testdata go.mod lacks %q", rel)
	}
	b = bytes.Replace(b, []byte(rel), []byte("github.com/wasmprov/wasmprov => "+root), 1)
	if err := os.WriteFile(gomod, b, 0o644); err != nil {
		t.Fatal(err)
	}

	engine := testhost.Engine()
	if engine == "" {
		engine = runtime.EngineWazero
	}
	out := filepath.Join(dir, "pkg", "cloudprovider", "provider", "hetznerwasm", "provider.go")
	if code, _, errOut := runCLI(t, "gen", "machine-controller-adapter", "--provider", "hetzner-wasm",
		"--engine", string(engine), "-o", out); code != 0 {
		t.Fatalf("generating: exit %d: %s", code, errOut)
	}

	policy := filepath.Join(t.TempDir(), "hetzner-wasm.yaml")
	// Validate and AddDefaults carry no Machine, hence no namespace: the
	// Secret's must be allowed by name.
	pol := "allowedHosts: [\"127.0.0.1:*\"]\nallowInsecureHTTP: true\ncallTimeout: 30s\nallowedSecretNamespaces: [kube-system]\n"
	if err := os.WriteFile(policy, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}

	var flags []string
	if engine == runtime.EngineWasmtime {
		flags = append(flags, "-tags", "wasmtime")
	}
	if overlay := stubOverlay(t, root); overlay != "" {
		flags = append(flags, "-overlay", overlay)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=",
		"WASMPROV_HETZNER_WASM_MODULE="+wasm,
		"WASMPROV_HETZNER_WASM_POLICY="+policy,
		"WASMPROV_HETZNER_WASM_CACHE_DIR="+testguest.CompilationCacheDir(t))
	run := func(args ...string) string {
		t.Helper()
		start := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the machine-controller tree: %v\n%s", strings.Join(args, " "), err, b)
		}
		t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return string(b)
	}
	run(append(append([]string{"vet"}, flags...), "./...")...)
	res := run(append(append([]string{"test", "-count=1", "-v"}, flags...), "-run", "^TestLifecycle$", "./pkg/cloudprovider/")...)
	if !strings.Contains(res, "--- PASS: TestLifecycle") {
		t.Fatalf("the lifecycle test did not pass:\n%s", res)
	}
	// The runtime's load line names the engine the generated file chose.
	if !strings.Contains(res, "engine="+string(engine)+" ") {
		t.Fatalf("the module was not loaded on %s:\n%s", engine, res)
	}
	for _, line := range strings.Split(res, "\n") {
		if strings.Contains(line, "Cleanup returned") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// stubOverlay returns a go -overlay file that adds a stand-in for
// cloudprovider.New to the checkout at root when the checkout has none
// yet (it is written in parallel), else "". Nothing is written into the
// checkout.
func stubOverlay(t *testing.T, root string) string {
	t.Helper()
	pkg := filepath.Join(root, "cloudprovider")
	files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("\nfunc New(")) {
			return ""
		}
	}
	stub, err := filepath.Abs(filepath.Join("testdata", "machine-controller", "_stub", "cloudprovider_new.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s has no New yet: overlaying the stand-in %s", pkg, stub)
	b, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "zz_dropin_stub.go"): stub}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyTree copies the regular files under src to dst, leaving out the
// directories Go ignores (_stub).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
