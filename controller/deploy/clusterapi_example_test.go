package deploy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The Cluster API example (docs/CLUSTER-API.md): wasmprov's kinds decode
// strictly into their types, the template's providerSpec is one the
// providers' config decoder reads, and what the Cluster and the
// MachineDeployment reference is in the file with the API group and kind
// Cluster API resolves.
func TestClusterAPIExample(t *testing.T) {
	y, err := os.ReadFile("examples/cluster-api/hetzner.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{} // by kind/name
	for _, doc := range bytes.Split(y, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("YAML: %v", err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		objs[u.GetKind()+"/"+u.GetName()] = u
		switch u.GetKind() {
		case "WasmMachineTemplate":
			var tmpl infrav1.WasmMachineTemplate
			if err := apitest.StrictUnmarshal(j, &tmpl); err != nil {
				t.Fatalf("%s: %v", u.GetName(), err)
			}
			cfg, err := providerconfig.GetConfig(&tmpl.Spec.Template.Spec.ProviderSpec)
			if err != nil || cfg.CloudProvider != "hetzner" {
				t.Fatalf("%s: providerSpec %+v, %v", u.GetName(), cfg, err)
			}
		case "WasmCluster":
			var wc infrav1.WasmCluster
			if err := apitest.StrictUnmarshal(j, &wc); err != nil || wc.Spec.ControlPlaneEndpoint.Port == 0 {
				t.Fatalf("%s: %+v, %v", u.GetName(), wc.Spec, err)
			}
		}
	}
	refs := []struct{ obj, path, want string }{
		{"Cluster/demo", "spec.infrastructureRef", "WasmCluster"},
		{"MachineDeployment/workers", "spec.template.spec.infrastructureRef", "WasmMachineTemplate"},
		{"MachineDeployment/workers", "spec.template.spec.bootstrap.configRef", "KubeadmConfigTemplate"},
	}
	for _, r := range refs {
		o := objs[r.obj]
		if o == nil {
			t.Fatalf("%s missing", r.obj)
		}
		ref, _, _ := unstructured.NestedStringMap(o.Object, strings.Split(r.path, ".")...)
		if ref["kind"] != r.want || objs[r.want+"/"+ref["name"]] == nil {
			t.Errorf("%s %s = %v: not a %s of the file", r.obj, r.path, ref, r.want)
		}
		if r.want != "KubeadmConfigTemplate" && ref["apiGroup"] != infrav1.GroupName {
			t.Errorf("%s %s apiGroup %q", r.obj, r.path, ref["apiGroup"])
		}
	}
}
