package infrastructure

import (
	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The watches wake a WasmMachine for what its reconcile reads, not for
// every write: Cluster API's controllers rewrite the status of Machines
// and Clusters often, and the reconciler writes the WasmMachine's own
// status. Waking on those would call the provider again at each (a
// WasmMachine whose provider is failing would be retried at the pace of
// Cluster API's status writes, not its backoff).

// wasmMachineChanged passes a WasmMachine update that changed more than
// its status: its spec, labels, annotations (pause), owners (the Machine
// adopting it), finalizers or deletion.
var wasmMachineChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*infrav1.WasmMachine)
	n, ok2 := e.ObjectNew.(*infrav1.WasmMachine)
	if !ok1 || !ok2 {
		return true
	}
	om, nm := o.ObjectMeta.DeepCopy(), n.ObjectMeta.DeepCopy()
	om.ResourceVersion, nm.ResourceVersion = "", ""
	om.ManagedFields, nm.ManagedFields = nil, nil
	return !equality.Semantic.DeepEqual(om, nm) || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
}}

// machineChanged passes a Cluster API Machine update that changed its
// spec (the bootstrap data Secret, the version) or its deletion.
var machineChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
}}

// clusterChanged passes a Cluster update that changed its spec (pause),
// its annotations (the paused annotation) or whether its infrastructure
// is provisioned.
var clusterChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) {
		return true
	}
	return provisionedOf(e.ObjectOld) != provisionedOf(e.ObjectNew)
}}

func provisionedOf(o any) bool {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	return (&capiCluster{u}).infrastructureProvisioned()
}
