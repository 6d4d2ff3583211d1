package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The types in this file mirror upstream
// sdk/apis/cluster/v1alpha1/common_types.go.

// ProviderSpec defines the configuration to use during node creation.
// No more than one of its fields may be specified.
type ProviderSpec struct {
	// Value is an inlined, serialized representation of the provider
	// configuration (see package providerconfig for its typed form).
	//
	// It is a RawExtension on purpose: its bytes are kept exactly as they
	// were read, so fields that this module does not know about survive a
	// decode/encode cycle.
	// +optional
	Value *runtime.RawExtension `json:"value,omitempty"`

	// ValueFrom is a source for the provider configuration. Cannot be used
	// if Value is not empty.
	// +optional
	ValueFrom *ProviderSpecSource `json:"valueFrom,omitempty"`
}

// ProviderSpecSource represents a source for the provider-specific
// resource configuration.
type ProviderSpecSource struct {
	// MachineClass is the machine class from which the provider config
	// should be sourced.
	// +optional
	MachineClass *MachineClassRef `json:"machineClass,omitempty"`
}

// MachineClassRef is a reference to a MachineClass object.
//
// ObjectReference is a pointer, as upstream's: a nil one encodes nothing,
// and its promoted fields (Name, Namespace, …) must not be read before
// checking it.
type MachineClassRef struct {
	// +optional
	*corev1.ObjectReference `json:",inline"`

	// Provider is the name of the cloud-provider which the MachineClass is
	// intended for.
	// +optional
	Provider string `json:"provider,omitempty"`
}
