package infrastructure

import (
	"context"
	"testing"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A WasmCluster is provisioned at once, unless its Cluster is paused.
func TestClusterProvisionedUnlessPaused(t *testing.T) {
	for _, paused := range []bool{false, true} {
		e := newEnv(t)
		if paused {
			_ = unstructured.SetNestedField(e.cluster.Object, true, "spec", "paused")
			if err := e.c.Update(context.Background(), e.cluster); err != nil {
				t.Fatal(err)
			}
		}
		wc := &infrav1.WasmCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wc", Generation: 1,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterGVK.GroupVersion().String(), Kind: "Cluster", Name: "c1", UID: "cluster-uid"}}},
			Spec: infrav1.WasmClusterSpec{ControlPlaneEndpoint: infrav1.APIEndpoint{Host: "10.0.0.1", Port: 6443}}}
		if err := e.c.Create(context.Background(), wc); err != nil {
			t.Fatal(err)
		}
		r := &ClusterReconciler{Client: e.c, Logger: quiet()}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wc)}); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(wc), wc); err != nil {
			t.Fatal(err)
		}
		provisioned := wc.Status.Initialization != nil && *wc.Status.Initialization.Provisioned
		p := meta.FindStatusCondition(wc.Status.Conditions, infrav1.ConditionPaused)
		if provisioned == paused || p == nil || (p.Status == metav1.ConditionTrue) != paused {
			t.Fatalf("paused %v: provisioned %v, Paused %+v", paused, provisioned, p)
		}
	}
}

// A Cluster API Machine maps to the WasmMachine its infrastructureRef
// names, a Cluster to its WasmCluster and to its WasmMachines; a
// reference to another kind or group maps to nothing.
func TestWatchMappings(t *testing.T) {
	e := newEnv(t)
	if got := machineToWasmMachine(context.Background(), e.machine); len(got) != 1 || got[0].NamespacedName != key {
		t.Fatalf("Machine → %v", got)
	}
	other := e.machine.DeepCopy()
	_ = unstructured.SetNestedField(other.Object, "infrastructure.cluster.x-k8s.io", "spec", "infrastructureRef", "apiGroup")
	if got := machineToWasmMachine(context.Background(), other); len(got) != 0 {
		t.Fatalf("another provider's Machine → %v", got)
	}
	if got := e.r.clusterToWasmMachines(context.Background(), e.cluster); len(got) != 1 || got[0].NamespacedName != key {
		t.Fatalf("Cluster → %v", got)
	}
	_ = unstructured.SetNestedMap(e.cluster.Object, map[string]any{"apiGroup": infrav1.GroupName, "kind": "WasmCluster", "name": "wc"}, "spec", "infrastructureRef")
	if got := clusterToWasmCluster(context.Background(), e.cluster); len(got) != 1 || got[0].Name != "wc" {
		t.Fatalf("Cluster → WasmCluster %v", got)
	}
}

// What a provider changes through the MachineUpdater lands in the
// WasmMachine: labels, annotations, providerSpec; the view it gets back
// is the stored one.
func TestMachineUpdater(t *testing.T) {
	e := newEnv(t)
	view := machineView(e.get(), "1.37.2")
	got, err := e.r.updater(context.Background(), "1.37.2")(view, func(m *machineT) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["cloud/volume"] = "vol-1"
		m.Spec.ProviderSpec.Value = ptrRaw(providerSpec(cloudSpec{Type: "cx32"}))
	})
	if err != nil {
		t.Fatal(err)
	}
	wm := e.get()
	_, cs, _ := specOf(*machineView(wm, "").Spec.DeepCopy())
	if wm.Annotations["cloud/volume"] != "vol-1" || cs.Type != "cx32" || got.Annotations["cloud/volume"] != "vol-1" || got.Spec.Versions.Kubelet != "1.37.2" {
		t.Fatalf("stored %v %+v; returned %v", wm.Annotations, cs, got.Annotations)
	}
}

// Machines lists the WasmMachines as the Machines providers see, for the
// Machine controller's SetMetricsForMachines.
func TestMachinesForProviderMetrics(t *testing.T) {
	e := newEnv(t)
	ms := e.r.Machines(context.Background())
	if len(ms) != 1 || ms[0].Name != "wm1" || ms[0].UID != "wm-uid" || ms[0].Spec.ProviderSpec.Value == nil {
		t.Fatalf("Machines %+v", ms)
	}
}
