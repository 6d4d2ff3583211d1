package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The types in this file mirror upstream
// sdk/apis/cluster/v1alpha1/machineclass_types.go. MachineClass is rarely
// used, but upstream registers it in the group, and ProviderSpecSource can
// point at one, so it is kept for a complete scheme.

// MachineClass can be used to templatize and re-use provider configuration
// across multiple Machines / MachineSets / MachineDeployments (resource
// "machineclasses", short name "mc").
type MachineClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ProviderSpec is the provider-specific configuration to use during
	// node creation. Note that, unlike MachineSpec.ProviderSpec, this is the
	// raw configuration itself, not a ProviderSpec wrapper.
	ProviderSpec runtime.RawExtension `json:"providerSpec"`
}

// MachineClassList contains a list of MachineClasses.
type MachineClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineClass `json:"items"`
}
