package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"
	wasmruntime "github.com/wasmprov/wasmprov/runtime"
)

// The example WasmProviders in examples/ are what a user applies first:
// each decodes strictly into the API types and passes the checks the
// controller makes of a spec, so a misspelt field in an example fails here.

const examplesDir = "examples"

func TestExamplesDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		names[filepath.Base(f)] = true
	}
	for _, want := range []string{"wasmprovider-hetzner.yaml", "wasmprovider-configmap.yaml"} {
		if !names[want] {
			t.Errorf("%s: missing from %s", want, examplesDir)
		}
	}
	codecs := serializer.NewCodecFactory(apitest.Scheme(t, v1alpha1.AddToScheme), serializer.EnableStrict)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			y, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			j, err := yaml.YAMLToJSONStrict(y)
			if err != nil {
				t.Fatalf("YAML: %v", err)
			}
			var wp v1alpha1.WasmProvider
			if err := apitest.StrictUnmarshal(j, &wp); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			if wp.APIVersion != "wasmprov.io/v1alpha1" || wp.Kind != "WasmProvider" {
				t.Errorf("apiVersion/kind = %q/%q", wp.APIVersion, wp.Kind)
			}
			// The codec client-go uses must pick the registered type too.
			obj, gvk, err := codecs.UniversalDeserializer().Decode(y, nil, nil)
			if err != nil {
				t.Fatalf("codec decode: %v", err)
			}
			if *gvk != v1alpha1.SchemeGroupVersion.WithKind("WasmProvider") {
				t.Errorf("codec GVK = %v", *gvk)
			}
			if !apiequality.Semantic.DeepEqual(obj, &wp) {
				t.Errorf("codec and strict decode disagree")
			}
			checkExampleSemantics(t, &wp)
		})
	}
}

// checkExampleSemantics holds an example to what the CRD's validation and
// the controller require, as far as that can be checked without an API
// server: one source, verify only with an image, and a policy that
// runtime.ParsePolicy accepts (strict: a misspelt field in an example
// fails here).
func checkExampleSemantics(t *testing.T, wp *v1alpha1.WasmProvider) {
	t.Helper()
	s := wp.Spec.Source
	n := 0
	for _, set := range []bool{s.Image != nil, s.ConfigMap != nil, s.URL != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d sources set, want exactly one", n)
	}
	if wp.Spec.Verify != nil {
		if s.Image == nil {
			t.Error("verify without an image source")
		}
		// runtime/signature's TestExampleVerifyBlocksParse parses the
		// block itself: Sigstore stays out of this module.
	}
	if wp.Spec.Policy != nil {
		if _, err := wasmruntime.ParsePolicy(wp.Spec.Policy.Raw); err != nil {
			t.Errorf("spec.policy: %v", err)
		}
	}
	if s.Image != nil && !strings.Contains(s.Image.Ref, "@sha256:") {
		t.Errorf("image example %q is not pinned by digest", s.Image.Ref)
	}
}
