// Package v1alpha1 is the cluster.k8s.io/v1alpha1 Machine API, the subset
// a provider sees.
package v1alpha1

import (
	"k8c.io/machine-controller/sdk/apis/cluster/common"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Machine is one machine of a cluster.
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineSpec   `json:"spec,omitempty"`
	Status MachineStatus `json:"status,omitempty"`
}

// MachineSpec is a Machine's desired state.
type MachineSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Taints       []corev1.Taint           `json:"taints,omitempty"`
	ProviderSpec ProviderSpec             `json:"providerSpec"`
	Versions     MachineVersionInfo       `json:"versions,omitempty"`
	ConfigSource *corev1.NodeConfigSource `json:"configSource,omitempty"`
	ProviderID   *string                  `json:"providerID,omitempty"`
}

// MachineStatus is a Machine's observed state.
type MachineStatus struct {
	NodeRef        *corev1.ObjectReference    `json:"nodeRef,omitempty"`
	LastUpdated    *metav1.Time               `json:"lastUpdated,omitempty"`
	Versions       *MachineVersionInfo        `json:"versions,omitempty"`
	ErrorReason    *common.MachineStatusError `json:"errorReason,omitempty"`
	ErrorMessage   *string                    `json:"errorMessage,omitempty"`
	ProviderStatus *runtime.RawExtension      `json:"providerStatus,omitempty"`
	Addresses      []corev1.NodeAddress       `json:"addresses,omitempty"`
	Conditions     []corev1.NodeCondition     `json:"conditions,omitempty"`
	LastOperation  *LastOperation             `json:"lastOperation,omitempty"`
	Phase          *string                    `json:"phase,omitempty"`
}

// LastOperation is the last operation run on a Machine.
type LastOperation struct {
	Description *string      `json:"description,omitempty"`
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
	State       *string      `json:"state,omitempty"`
	Type        *string      `json:"type,omitempty"`
}

// MachineVersionInfo is the software versions of a Machine.
type MachineVersionInfo struct {
	Kubelet      string `json:"kubelet"`
	ControlPlane string `json:"controlPlane,omitempty"`
}

// MachineList is a list of Machines.
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Machine `json:"items"`
}

// ProviderSpec is the provider's configuration of a Machine.
type ProviderSpec struct {
	Value     *runtime.RawExtension `json:"value,omitempty"`
	ValueFrom *ProviderSpecSource   `json:"valueFrom,omitempty"`
}

// ProviderSpecSource is where a ProviderSpec comes from.
type ProviderSpecSource struct {
	MachineClass *MachineClassRef `json:"machineClass,omitempty"`
}

// MachineClassRef names a MachineClass.
type MachineClassRef struct {
	*corev1.ObjectReference `json:",inline"`

	Provider string `json:"provider,omitempty"`
}
