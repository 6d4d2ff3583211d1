package infrastructure

import (
	"context"
	"strings"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Cluster API kinds read here, at the contract version the CRDs are
// labelled for (infrav1.ContractLabel).
var (
	clusterAPIGroup = "cluster.x-k8s.io"
	machineGVK      = schema.GroupVersionKind{Group: clusterAPIGroup, Version: "v1beta2", Kind: "Machine"}
	clusterGVK      = schema.GroupVersionKind{Group: clusterAPIGroup, Version: "v1beta2", Kind: "Cluster"}
)

// Cluster API's well-known label and annotation.
const (
	// ClusterNameLabel names the Cluster an object belongs to; Cluster
	// API puts it on the InfraMachines it owns.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// PausedAnnotation on a Cluster or on a WasmMachine stops its
	// reconciliation.
	PausedAnnotation = "cluster.x-k8s.io/paused"
)

func newUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// capiMachine is the part of a Cluster API Machine the reconciler reads.
type capiMachine struct{ u *unstructured.Unstructured }

// ownerMachine returns the Cluster API Machine that owns wm, nil if none
// does (yet) or if it is gone.
func ownerMachine(ctx context.Context, c client.Reader, wm *infrav1.WasmMachine) (*capiMachine, error) {
	for _, ref := range wm.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterAPIGroup || ref.Kind != "Machine" {
			continue
		}
		u := newUnstructured(machineGVK)
		if err := c.Get(ctx, types.NamespacedName{Namespace: wm.Namespace, Name: ref.Name}, u); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if u.GetUID() != ref.UID {
			return nil, nil // a new Machine of the same name: not our owner
		}
		return &capiMachine{u}, nil
	}
	return nil, nil
}

func (m *capiMachine) str(path ...string) string {
	s, _, _ := unstructured.NestedString(m.u.Object, path...)
	return s
}

// clusterName is spec.clusterName.
func (m *capiMachine) clusterName() string { return m.str("spec", "clusterName") }

// bootstrapSecret is spec.bootstrap.dataSecretName: "" until the
// bootstrap provider (or the user) made the bootstrap data.
func (m *capiMachine) bootstrapSecret() string { return m.str("spec", "bootstrap", "dataSecretName") }

// kubeletVersion is spec.version without its "v", as machine-controller's
// spec.versions.kubelet is written.
func (m *capiMachine) kubeletVersion() string {
	return strings.TrimPrefix(m.str("spec", "version"), "v")
}

// owner names the Machine's controller (its MachineSet, for a Machine of
// a MachineDeployment): the unit of the per-owner Create cap; "" if none.
func (m *capiMachine) owner() string {
	for _, ref := range m.u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return m.u.GetNamespace() + "/" + ref.Kind + "/" + ref.Name
		}
	}
	return ""
}

// capiCluster is the part of a Cluster API Cluster the reconciler reads.
type capiCluster struct{ u *unstructured.Unstructured }

func getCluster(ctx context.Context, c client.Reader, namespace, name string) (*capiCluster, error) {
	u := newUnstructured(clusterGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		return nil, err
	}
	return &capiCluster{u}, nil
}

// paused: spec.paused, or the paused annotation on the Cluster.
func (c *capiCluster) paused() bool {
	p, _, _ := unstructured.NestedBool(c.u.Object, "spec", "paused")
	_, annotated := c.u.GetAnnotations()[PausedAnnotation]
	return p || annotated
}

// infrastructureProvisioned is status.initialization.infrastructureProvisioned.
func (c *capiCluster) infrastructureProvisioned() bool {
	p, _, _ := unstructured.NestedBool(c.u.Object, "status", "initialization", "infrastructureProvisioned")
	return p
}

// infrastructureRef returns the namespaced name of the WasmMachine a
// Machine's spec.infrastructureRef names, if it names one.
func infrastructureRef(u *unstructured.Unstructured) (types.NamespacedName, bool) {
	return ref(u, "WasmMachine")
}

// ref returns spec.infrastructureRef of u if it names an object of kind
// of this API group.
func ref(u *unstructured.Unstructured, want string) (types.NamespacedName, bool) {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "apiGroup")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "name")
	if group != infrav1.GroupName || kind != want || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: u.GetNamespace(), Name: name}, true
}

// infraClusterRef returns the namespaced name of the WasmCluster a
// Cluster's spec.infrastructureRef names, if it names one.
func infraClusterRef(u *unstructured.Unstructured) (types.NamespacedName, bool) {
	return ref(u, "WasmCluster")
}
