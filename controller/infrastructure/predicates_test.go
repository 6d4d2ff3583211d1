package infrastructure

import (
	"testing"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Status-only writes (the reconciler's own, Cluster API's on Machines and
// Clusters) wake nothing; what a reconcile reads does.
func TestWatchPredicates(t *testing.T) {
	update := func(p predicate.Funcs, old, new client.Object) bool {
		return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}
	wm := &infrav1.WasmMachine{ObjectMeta: metav1.ObjectMeta{Name: "wm", ResourceVersion: "1", Generation: 1}}
	status := wm.DeepCopy()
	status.ResourceVersion = "2"
	status.Status.InstanceStatus = "running"
	owned := wm.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Machine", Name: "m"}}
	if update(wasmMachineChanged, wm, status) || !update(wasmMachineChanged, wm, owned) {
		t.Error("WasmMachine: a status write must not wake it, an owner reference must")
	}

	m := newUnstructured(machineGVK)
	m.SetGeneration(1)
	mStatus := m.DeepCopy()
	_ = unstructured.SetNestedField(mStatus.Object, "Running", "status", "phase")
	mSpec := m.DeepCopy()
	mSpec.SetGeneration(2)
	if update(machineChanged, m, mStatus) || !update(machineChanged, m, mSpec) {
		t.Error("Machine: a status write must not wake its WasmMachine, a spec change must")
	}

	c := newUnstructured(clusterGVK)
	cProv := c.DeepCopy()
	_ = unstructured.SetNestedField(cProv.Object, true, "status", "initialization", "infrastructureProvisioned")
	cCond := c.DeepCopy()
	_ = unstructured.SetNestedField(cCond.Object, "x", "status", "phase")
	cPaused := c.DeepCopy()
	cPaused.SetAnnotations(map[string]string{PausedAnnotation: ""})
	if !update(clusterChanged, c, cProv) || update(clusterChanged, c, cCond) || !update(clusterChanged, c, cPaused) {
		t.Error("Cluster: provisioned and the paused annotation must wake, other status writes must not")
	}
}
