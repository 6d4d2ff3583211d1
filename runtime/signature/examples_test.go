package signature_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// TestExampleVerifyBlocksParse: the spec.verify block of every example
// WasmProvider a user copies (controller/deploy/examples) is a policy this
// package accepts. The controller module checks the rest of each example;
// this part lives here so that Sigstore stays out of that module.
func TestExampleVerifyBlocksParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "controller", "deploy", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var wp v1alpha1.WasmProvider
		if err := yaml.UnmarshalStrict(y, &wp); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if wp.Spec.Verify == nil {
			continue
		}
		n++
		if _, err := signature.ParsePolicy(wp.Spec.Verify.Raw, t.TempDir()); err != nil {
			t.Errorf("%s: spec.verify: %v", filepath.Base(f), err)
		}
	}
	if n == 0 {
		t.Fatalf("no example under controller/deploy/examples has spec.verify (of %d files): the check checks nothing", len(files))
	}
}
