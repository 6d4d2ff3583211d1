package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The types in this file mirror upstream
// sdk/apis/cluster/v1alpha1/machine_types.go. Field names, JSON names and
// omitempty flags are kept exactly as upstream has them, including the
// ones that look inconsistent (for example spec.providerSpec and
// spec.versions.kubelet are always emitted): changing any of them would
// change what this module writes to the API server.

// Machine is the Schema for the machines API (resource "machines", short
// name "ma").
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineSpec   `json:"spec,omitempty"`
	Status MachineStatus `json:"status,omitempty"`
}

// MachineSpec defines the desired state of Machine.
type MachineSpec struct {
	// ObjectMeta will autopopulate the Node created. Use this to indicate
	// what labels, annotations, name prefix, etc., should be used when
	// creating the Node.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Taints is the list of taints to be applied to the corresponding Node
	// in an additive manner.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// ProviderSpec details provider-specific configuration to use during
	// node creation. Upstream gives it no omitempty, so it is always
	// emitted (as {} when empty).
	// +optional
	ProviderSpec ProviderSpec `json:"providerSpec"`

	// Versions of key software to use.
	// +optional
	Versions MachineVersionInfo `json:"versions,omitempty"`

	// ConfigSource is used to populate in the associated Node for dynamic
	// kubelet config.
	//
	// Deprecated: This feature has been removed with k8s v1.24. The field is
	// kept so that objects which still carry it round-trip unchanged.
	// +optional
	ConfigSource *corev1.NodeConfigSource `json:"configSource,omitempty"`

	// ProviderID is the identification ID of the machine provided by the
	// provider. It must match the provider ID as seen on the Node object
	// corresponding to this machine.
	// +optional
	ProviderID *string `json:"providerID,omitempty"`
}

// MachineStatus defines the observed state of Machine.
type MachineStatus struct {
	// NodeRef will point to the corresponding Node if it exists.
	// +optional
	NodeRef *corev1.ObjectReference `json:"nodeRef,omitempty"`

	// LastUpdated identifies when this status was last observed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// Versions specifies the current versions of software on the
	// corresponding Node (if it exists).
	// +optional
	Versions *MachineVersionInfo `json:"versions,omitempty"`

	// ErrorReason will be set in the event that there is a terminal problem
	// reconciling the Machine and will contain a succinct value suitable
	// for machine interpretation.
	// +optional
	ErrorReason *MachineStatusError `json:"errorReason,omitempty"`

	// ErrorMessage will be set in the event that there is a terminal problem
	// reconciling the Machine and will contain a more verbose string
	// suitable for logging and human consumption.
	// +optional
	ErrorMessage *string `json:"errorMessage,omitempty"`

	// ProviderStatus details a provider-specific status. Kept raw for the
	// same reason as ProviderSpec.Value.
	// +optional
	ProviderStatus *runtime.RawExtension `json:"providerStatus,omitempty"`

	// Addresses is a list of addresses assigned to the machine, queried
	// from the cloud provider if available.
	// +optional
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`

	// Conditions lists the conditions synced from the node conditions of
	// the corresponding Node object.
	// +optional
	Conditions []corev1.NodeCondition `json:"conditions,omitempty"`

	// LastOperation describes the last operation performed by the
	// machine-controller.
	// +optional
	LastOperation *LastOperation `json:"lastOperation,omitempty"`

	// Phase represents the current phase of machine actuation, e.g.
	// Pending, Running, Terminating, Failed.
	// +optional
	Phase *string `json:"phase,omitempty"`
}

// LastOperation represents the detail of the last performed operation on
// the Machine.
type LastOperation struct {
	// Description is the human-readable description of the last operation.
	Description *string `json:"description,omitempty"`

	// LastUpdated is the timestamp at which LastOperation was last updated.
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// State is the current status of the last performed operation, e.g.
	// Processing, Failed, Successful.
	State *string `json:"state,omitempty"`

	// Type is the type of operation which was last performed, e.g. Create,
	// Delete, Update.
	Type *string `json:"type,omitempty"`
}

// MachineVersionInfo holds information regarding kubelet and control plane
// versions for a machine.
type MachineVersionInfo struct {
	// Kubelet is the semantic version of kubelet to run. Upstream gives it
	// no omitempty, so it is always emitted.
	Kubelet string `json:"kubelet"`

	// ControlPlane is the semantic version of the Kubernetes control plane
	// to run. This should only be populated when the machine is a control
	// plane.
	// +optional
	ControlPlane string `json:"controlPlane,omitempty"`
}

// MachineList contains a list of Machine.
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}
