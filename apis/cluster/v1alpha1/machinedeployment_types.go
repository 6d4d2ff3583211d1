package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types in this file mirror upstream
// sdk/apis/cluster/v1alpha1/machinedeployment_types.go. Upstream's
// defaulting (defaults.go, PopulateDefaultsMachineDeployment) is behaviour,
// not wire format, and is not ported.

// MachineDeployment is the Schema for the machinedeployments API (short
// name "md").
type MachineDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineDeploymentSpec   `json:"spec,omitempty"`
	Status MachineDeploymentStatus `json:"status,omitempty"`
}

// MachineDeploymentSpec defines the desired state of MachineDeployment.
type MachineDeploymentSpec struct {
	// Replicas is the number of desired machines. Defaults to 1. This is a
	// pointer to distinguish between explicit zero and not specified.
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector is the label selector for machines. Existing MachineSets
	// whose machines are selected by this will be the ones affected by this
	// deployment. It must match the machine template's labels.
	Selector metav1.LabelSelector `json:"selector"`

	// Template describes the machines that will be created.
	Template MachineTemplateSpec `json:"template"`

	// Strategy is the deployment strategy to use to replace existing
	// machines with new ones.
	// +optional
	Strategy *MachineDeploymentStrategy `json:"strategy,omitempty"`

	// MinReadySeconds is the minimum number of seconds for which a newly
	// created machine should be ready. A pointer, so an explicit 0 is
	// preserved on the wire.
	// +optional
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is the number of old MachineSets to retain to
	// allow rollback. Defaults to 1.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Paused indicates that the deployment is paused.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ProgressDeadlineSeconds is the maximum time in seconds for a
	// deployment to make progress before it is considered to be failed.
	// Defaults to 600s.
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// MachineDeploymentStrategy describes how to replace existing machines
// with new ones.
type MachineDeploymentStrategy struct {
	// Type of deployment. Currently the only supported strategy is
	// "RollingUpdate", which is also the default.
	// +optional
	Type MachineDeploymentStrategyType `json:"type,omitempty"`

	// RollingUpdate holds the rolling update config params. Present only if
	// Type is RollingUpdate.
	// +optional
	RollingUpdate *MachineRollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// MachineRollingUpdateDeployment controls the desired behavior of a rolling
// update.
type MachineRollingUpdateDeployment struct {
	// MaxUnavailable is the maximum number of machines that can be
	// unavailable during the update: an absolute number (ex: 5) or a
	// percentage of desired machines (ex: 10%). Defaults to 0.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,1,opt,name=maxUnavailable"`

	// MaxSurge is the maximum number of machines that can be scheduled
	// above the desired number of machines: an absolute number (ex: 5) or a
	// percentage of desired machines (ex: 10%). Defaults to 1.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty" protobuf:"bytes,2,opt,name=maxSurge"`
}

// MachineDeploymentStatus defines the observed state of MachineDeployment.
type MachineDeploymentStatus struct {
	// ObservedGeneration is the generation observed by the deployment
	// controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`

	// Replicas is the total number of non-terminated machines targeted by
	// this deployment (their labels match the selector).
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`

	// UpdatedReplicas is the total number of non-terminated machines
	// targeted by this deployment that have the desired template spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty" protobuf:"varint,3,opt,name=updatedReplicas"`

	// ReadyReplicas is the total number of ready machines targeted by this
	// deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty" protobuf:"varint,7,opt,name=readyReplicas"`

	// AvailableReplicas is the total number of available machines (ready
	// for at least minReadySeconds) targeted by this deployment.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty" protobuf:"varint,4,opt,name=availableReplicas"`

	// UnavailableReplicas is the total number of unavailable machines
	// targeted by this deployment.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty" protobuf:"varint,5,opt,name=unavailableReplicas"`
}

// MachineDeploymentList contains a list of MachineDeployment.
type MachineDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDeployment `json:"items"`
}
