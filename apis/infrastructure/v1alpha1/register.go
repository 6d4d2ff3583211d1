package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the types in this package.
const GroupName = "infrastructure.wasmprov.io"

// GroupVersion is the API version of the types in this package.
const GroupVersion = "v1alpha1"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: GroupVersion}

// ContractLabel is the label the CRDs carry for Cluster API: the
// contract version they implement, mapped to the versions of this API
// that implement it.
const ContractLabel = "cluster.x-k8s.io/v1beta2"

var (
	// SchemeBuilder collects the functions that add this package's types
	// to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types (and meta/v1's list and watch types) to
	// a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&WasmMachine{}, &WasmMachineList{},
		&WasmMachineTemplate{}, &WasmMachineTemplateList{},
		&WasmCluster{}, &WasmClusterList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
