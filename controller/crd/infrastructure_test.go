package crd_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/crd"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"
)

// TestInfrastructureCRDsAreGenerated: the infrastructure CRDs on disk are
// what the Go types give (make crds writes them), and each names a kind
// the API package registers, carries Cluster API's contract label and has
// one served, stored version.
func TestInfrastructureCRDsAreGenerated(t *testing.T) {
	files, err := crd.Infrastructure("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d CRDs, want WasmMachine, WasmMachineTemplate and WasmCluster", len(files))
	}
	scheme := apitest.Scheme(t, infrav1.AddToScheme)
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (run make crds)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s gives: run make crds", name, crd.InfrastructureTypesGo)
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(want, &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Labels[infrav1.ContractLabel] != infrav1.GroupVersion {
			t.Errorf("%s: label %s = %q, want %q", name, infrav1.ContractLabel, c.Labels[infrav1.ContractLabel], infrav1.GroupVersion)
		}
		if len(c.Spec.Versions) != 1 || !c.Spec.Versions[0].Served || !c.Spec.Versions[0].Storage || c.Spec.Versions[0].Name != infrav1.GroupVersion {
			t.Errorf("%s: versions %+v", name, c.Spec.Versions)
		}
		for _, kind := range []string{c.Spec.Names.Kind, c.Spec.Names.ListKind} {
			if !scheme.Recognizes(infrav1.SchemeGroupVersion.WithKind(kind)) {
				t.Errorf("%s: kind %s is not registered by %s", name, kind, infrav1.SchemeGroupVersion)
			}
		}
		if c.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: scope %s, want Namespaced (Cluster API's contract)", name, c.Spec.Scope)
		}
		// What the API server checks when the CRD is created: a
		// structural schema, valid printer columns and names.
		var internal apiextensions.CustomResourceDefinition
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&c, &internal, nil); err != nil {
			t.Fatal(err)
		}
		internal.Status.StoredVersions = []string{infrav1.GroupVersion} // the API server's, on create
		if errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
			t.Errorf("%s: the API server would refuse it: %v", name, errs.ToAggregate())
		}
	}
}
