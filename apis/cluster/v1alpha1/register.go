package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Mirrors upstream sdk/apis/cluster/v1alpha1/register.go.

// GroupName is the API group of every type in this package.
const GroupName = "cluster.k8s.io"

// GroupVersion is the API version of every type in this package.
const GroupVersion = "v1alpha1"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: GroupVersion}

var (
	// SchemeBuilder collects the functions that add this package's types to
	// a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds all types of this package, plus the meta/v1 types
	// that every API group version needs (ListOptions, Status, WatchEvent
	// and friends), to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource takes an unqualified resource and returns a group qualified
// GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// Kind takes an unqualified kind and returns a group qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// addKnownTypes registers the same set of kinds as upstream, so that a
// scheme built from this package recognises everything machine-controller
// serves in the group.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Machine{},
		&MachineList{},
		&MachineClass{},
		&MachineClassList{},
		&MachineDeployment{},
		&MachineDeploymentList{},
		&MachineSet{},
		&MachineSetList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
