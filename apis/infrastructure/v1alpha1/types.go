package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WasmMachine is one machine of a Cluster API cluster, created by a
// wasmprov provider: Cluster API's InfraMachine. A CAPI Machine owns it
// (spec.infrastructureRef); the controller creates the instance once the
// Machine's bootstrap data is ready and deletes it before the WasmMachine
// goes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Namespaced,shortName=wm
// +kubebuilder:subresource:status
type WasmMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WasmMachineSpec   `json:"spec"`
	Status WasmMachineStatus `json:"status,omitempty"`
}

// WasmMachineSpec is what the machine should be.
type WasmMachineSpec struct {
	// ProviderID is the instance's provider ID as its Node carries it
	// (spec.providerID), set by the controller once the instance exists;
	// Cluster API copies it to the Machine and links the Node by it.
	ProviderID string `json:"providerID,omitempty"`

	// ProviderSpec is the provider's configuration: exactly what a
	// machine-controller Machine carries in spec.providerSpec.value —
	// cloudProvider (the wasmprov provider: a WasmProvider's
	// spec.cloudProvider or a module of the controller's provider
	// directory), cloudProviderSpec, operatingSystem, sshPublicKeys and
	// the rest. One spec, and one .wasm, serve both ecosystems.
	// +kubebuilder:pruning:PreserveUnknownFields
	ProviderSpec runtime.RawExtension `json:"providerSpec"`
}

// WasmMachineStatus is what the controller observed.
type WasmMachineStatus struct {
	// Initialization says whether the instance is provisioned: Cluster
	// API's v1beta2 contract (status.initialization.provisioned).
	Initialization *WasmMachineInitialization `json:"initialization,omitempty"`

	// Addresses are the instance's addresses, as its provider reports
	// them.
	Addresses []MachineAddress `json:"addresses,omitempty"`

	// InstanceID is the provider's name for the instance; InstanceStatus
	// its state as the provider reports it (running, creating, ...).
	InstanceID     string `json:"instanceID,omitempty"`
	InstanceStatus string `json:"instanceStatus,omitempty"`

	// Conditions: Ready (Cluster API mirrors it into the Machine's
	// InfrastructureReady), Paused, and TerminalFailure when the provider
	// answered with an error no retry can fix (its reason is
	// machine-controller's: InvalidConfiguration, CreateError, ...).
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// FailureReason and FailureMessage repeat a terminal failure in the
	// fields of Cluster API's deprecated v1beta1 contract, which Cluster
	// API still surfaces in the Machine's status.deprecated.v1beta1 (until
	// it drops them). The TerminalFailure condition is what counts.
	FailureReason  *string `json:"failureReason,omitempty"`
	FailureMessage *string `json:"failureMessage,omitempty"`

	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// WasmMachineInitialization is status.initialization of the InfraMachine
// contract.
type WasmMachineInitialization struct {
	// Provisioned is true once the instance exists and spec.providerID is
	// set.
	Provisioned *bool `json:"provisioned,omitempty"`
}

// MachineAddress is one address of a machine, as Cluster API's
// MachineAddress.
type MachineAddress struct {
	// Type is Hostname, ExternalIP, InternalIP, ExternalDNS or
	// InternalDNS.
	Type string `json:"type"`
	// Address is the address itself.
	Address string `json:"address"`
}

// WasmMachineList is a list of WasmMachines.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WasmMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WasmMachine `json:"items"`
}

// WasmMachineTemplate is what MachineSets and MachineDeployments stamp
// WasmMachines from: Cluster API's InfraMachineTemplate. Changing the
// template a MachineDeployment points to rolls its machines.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Namespaced,shortName=wmt
type WasmMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WasmMachineTemplateSpec `json:"spec"`
}

// WasmMachineTemplateSpec holds the template.
type WasmMachineTemplateSpec struct {
	// Template is the WasmMachine every machine made from it gets.
	Template WasmMachineTemplateResource `json:"template"`
}

// WasmMachineTemplateResource is a WasmMachine's metadata and spec, as
// stamped.
type WasmMachineTemplateResource struct {
	// ObjectMeta holds the labels and annotations the WasmMachines get.
	ObjectMeta TemplateMeta `json:"metadata,omitempty"`
	// Spec is the WasmMachines' spec.
	Spec WasmMachineSpec `json:"spec"`
}

// TemplateMeta is the part of an object's metadata a template sets.
type TemplateMeta struct {
	// Labels are added to each object made from the template.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to each object made from the template.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WasmMachineTemplateList is a list of WasmMachineTemplates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WasmMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WasmMachineTemplate `json:"items"`
}

// WasmCluster is the cluster's infrastructure: Cluster API's
// InfraCluster. wasmprov provisions no cluster-wide infrastructure (no
// network, no load balancer): a WasmCluster is provisioned at once, with
// the control plane endpoint its spec gives, if any (a control plane
// provider may give it instead).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Namespaced,shortName=wc
// +kubebuilder:subresource:status
type WasmCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WasmClusterSpec   `json:"spec,omitempty"`
	Status WasmClusterStatus `json:"status,omitempty"`
}

// WasmClusterSpec is what the cluster's infrastructure should be.
type WasmClusterSpec struct {
	// ControlPlaneEndpoint is where the cluster's API server is reached,
	// if known up front.
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
}

// APIEndpoint is a host and a port.
type APIEndpoint struct {
	// Host is a DNS name or an IP address.
	Host string `json:"host,omitempty"`
	// Port is the TCP port.
	Port int32 `json:"port,omitempty"`
}

// WasmClusterStatus is what the controller observed.
type WasmClusterStatus struct {
	// Initialization says the infrastructure is provisioned: at once.
	Initialization *WasmClusterInitialization `json:"initialization,omitempty"`
	// Conditions: Ready, Paused.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WasmClusterInitialization is status.initialization of the InfraCluster
// contract.
type WasmClusterInitialization struct {
	// Provisioned is true once the controller has seen the WasmCluster.
	Provisioned *bool `json:"provisioned,omitempty"`
}

// WasmClusterList is a list of WasmClusters.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WasmClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WasmCluster `json:"items"`
}

// Condition types and reasons of WasmMachines and WasmClusters.
const (
	// ConditionReady: the instance exists and is provisioned (the
	// WasmCluster: always). Cluster API mirrors it into the Machine's
	// InfrastructureReady condition.
	ConditionReady = "Ready"
	// ConditionPaused: the Cluster is paused (spec.paused) or the object
	// carries the cluster.x-k8s.io/paused annotation; nothing is done.
	ConditionPaused = "Paused"
	// ConditionTerminalFailure: the provider answered with an error no
	// retry fixes; the reason is machine-controller's error reason. Cluster
	// API's v1beta2 contract leaves terminal failures to conditions.
	ConditionTerminalFailure = "TerminalFailure"

	ReasonProvisioned             = "Provisioned"
	ReasonProvisioning            = "Provisioning" // created, not running yet
	ReasonInstanceGone            = "InstanceGone" // provisioned once, not found since: not recreated
	ReasonWaitingForCluster       = "WaitingForClusterInfrastructure"
	ReasonWaitingForCreateSlot    = "WaitingForCreateSlot" // the per-provider or per-MachineSet cap of Creates in flight
	ReasonWaitingForBootstrapData = "WaitingForBootstrapData"
	ReasonWaitingForMachineOwner  = "WaitingForMachineOwner"
	ReasonProviderNotServing      = "ProviderNotServing" // not configured, or failed to load
	ReasonProviderError           = "ProviderError"      // a transient error, retried with backoff
	ReasonTerminalError           = "TerminalError"
	ReasonDeleting                = "Deleting"
	ReasonPaused                  = "Paused"
	ReasonNotPaused               = "NotPaused"
	ReasonNoFailure               = "NoFailure"
)

// FinalizerWasmMachine keeps a WasmMachine until its instance is gone.
const FinalizerWasmMachine = "infrastructure.wasmprov.io/instance"
