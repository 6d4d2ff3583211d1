package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/runtime"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": true}})
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-system", UID: "uid-1"}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	if err := p.Validate(m.Spec); err != nil {
		t.Fatal(err)
	}
	inst, err := p.Get(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", inst)
}
