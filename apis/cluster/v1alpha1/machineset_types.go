package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types in this file mirror upstream
// sdk/apis/cluster/v1alpha1/machineset_types.go. Upstream's Validate and
// Default methods are behaviour, not wire format, and are not ported.

// MachineSet ensures that a specified number of machine replicas are
// running at any given time (resource "machinesets", short name "ms").
type MachineSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineSetSpec   `json:"spec,omitempty"`
	Status MachineSetStatus `json:"status,omitempty"`
}

// MachineSetSpec defines the desired state of MachineSet.
type MachineSetSpec struct {
	// Replicas is the number of desired replicas. This is a pointer to
	// distinguish between explicit zero and unspecified. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// MinReadySeconds is the minimum number of seconds for which a newly
	// created machine should be ready.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// DeletePolicy defines the policy used to identify nodes to delete when
	// downscaling: "Random" (default), "Newest" or "Oldest". Upstream
	// declares it as a plain string, not as MachineSetDeletePolicy.
	DeletePolicy string `json:"deletePolicy,omitempty"`

	// Selector is a label query over machines that should match the
	// replica count. It must match the machine template's labels.
	Selector metav1.LabelSelector `json:"selector"`

	// Template is the object that describes the machine that will be
	// created if insufficient replicas are detected.
	// +optional
	Template MachineTemplateSpec `json:"template,omitempty"`
}

// MachineSetDeletePolicy defines how priority is assigned to nodes to
// delete when downscaling a MachineSet. Defaults to "Random".
type MachineSetDeletePolicy string

const (
	// RandomMachineSetDeletePolicy prioritizes Machines annotated with
	// "cluster.k8s.io/delete-machine=yes" and unhealthy Machines, then picks
	// Machines at random.
	RandomMachineSetDeletePolicy MachineSetDeletePolicy = "Random"

	// NewestMachineSetDeletePolicy prioritizes annotated and unhealthy
	// Machines, then the newest Machines by CreationTimestamp.
	NewestMachineSetDeletePolicy MachineSetDeletePolicy = "Newest"

	// OldestMachineSetDeletePolicy prioritizes annotated and unhealthy
	// Machines, then the oldest Machines by CreationTimestamp.
	OldestMachineSetDeletePolicy MachineSetDeletePolicy = "Oldest"
)

// MachineTemplateSpec describes the data needed to create a Machine from a
// template.
type MachineTemplateSpec struct {
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the specification of the desired behavior of the machine.
	// +optional
	Spec MachineSpec `json:"spec,omitempty"`
}

// MachineSetStatus defines the observed state of MachineSet.
type MachineSetStatus struct {
	// Replicas is the most recently observed number of replicas. Upstream
	// gives it no omitempty, so it is always emitted.
	Replicas int32 `json:"replicas"`

	// FullyLabeledReplicas is the number of replicas that have labels
	// matching the labels of the machine template of the MachineSet.
	// +optional
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`

	// ReadyReplicas is the number of ready replicas for this MachineSet.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of available replicas (ready for at
	// least minReadySeconds) for this MachineSet.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// ObservedGeneration reflects the generation of the most recently
	// observed MachineSet.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ErrorReason is set, together with ErrorMessage, when there is a
	// terminal problem reconciling the replicas.
	// +optional
	ErrorReason *MachineSetStatusError `json:"errorReason,omitempty"`

	// ErrorMessage is the human readable counterpart of ErrorReason.
	// +optional
	ErrorMessage *string `json:"errorMessage,omitempty"`
}

// MachineSetList contains a list of MachineSet.
type MachineSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineSet `json:"items"`
}
