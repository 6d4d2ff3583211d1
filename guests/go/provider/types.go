package provider

import "encoding/json"

// The types below mirror cluster.k8s.io/v1alpha1 as JSON: a guest receives
// the host's Kubernetes wire format and, when it returns a spec or sends a
// patch, produces the same format. They are deliberately light (no
// apimachinery): fields a provider rarely reads stay json.RawMessage, which
// keeps them byte-for-byte and keeps the guest small.

// ObjectMeta mirrors metav1.ObjectMeta.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	SelfLink                   string            `json:"selfLink,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          json.RawMessage   `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *string           `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            json.RawMessage   `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	ManagedFields              json.RawMessage   `json:"managedFields,omitempty"`
}

// HasFinalizer reports whether name is in Finalizers.
func (m *ObjectMeta) HasFinalizer(name string) bool {
	for _, f := range m.Finalizers {
		if f == name {
			return true
		}
	}
	return false
}

// Machine mirrors cluster.k8s.io/v1alpha1 Machine. Status is kept raw: a
// provider reads it rarely and never writes it.
type Machine struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       MachineSpec     `json:"spec,omitempty"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// MachineSpec mirrors cluster.k8s.io/v1alpha1 MachineSpec.
type MachineSpec struct {
	ObjectMeta   `json:"metadata,omitempty"`
	Taints       json.RawMessage    `json:"taints,omitempty"`
	ProviderSpec ProviderSpec       `json:"providerSpec"`
	Versions     MachineVersionInfo `json:"versions,omitempty"`
	ConfigSource json.RawMessage    `json:"configSource,omitempty"`
	ProviderID   *string            `json:"providerID,omitempty"`
}

// ProviderSpec mirrors cluster.k8s.io/v1alpha1 ProviderSpec. Value is the
// provider configuration (decode it with DecodeConfig).
type ProviderSpec struct {
	Value     json.RawMessage `json:"value,omitempty"`
	ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
}

// MachineVersionInfo mirrors cluster.k8s.io/v1alpha1 MachineVersionInfo.
type MachineVersionInfo struct {
	Kubelet string `json:"kubelet"`
}

// Config mirrors machine-controller's providerconfig.Config, the usual
// content of providerSpec.value. CloudProviderSpec holds the provider's own
// settings; decode it into the provider's type.
type Config struct {
	SSHPublicKeys        []string        `json:"sshPublicKeys,omitempty"`
	CAPublicKey          string          `json:"caPublicKey,omitempty"`
	CloudProvider        string          `json:"cloudProvider,omitempty"`
	CloudProviderSpec    json.RawMessage `json:"cloudProviderSpec,omitempty"`
	OperatingSystem      string          `json:"operatingSystem,omitempty"`
	OperatingSystemSpec  json.RawMessage `json:"operatingSystemSpec,omitempty"`
	Network              json.RawMessage `json:"network,omitempty"`
	OverwriteCloudConfig *string         `json:"overwriteCloudConfig,omitempty"`
}

// DecodeConfig decodes spec.providerSpec.value into Config. An absent or
// malformed value is a terminal InvalidConfiguration error, as in
// machine-controller's providers.
func DecodeConfig(spec MachineSpec) (Config, error) {
	var c Config
	if len(spec.ProviderSpec.Value) == 0 || string(spec.ProviderSpec.Value) == "null" {
		return c, Terminal(InvalidConfiguration, "machine.spec.providerSpec.value is empty")
	}
	if err := decodeConfig(spec.ProviderSpec.Value, &c); err != nil {
		return c, Terminal(InvalidConfiguration, "failed to decode providerSpec.value: %v", err)
	}
	return c, nil
}

// Instance is what Get and Create return: machine-controller's
// instance.Instance as data.
type Instance struct {
	Name       string
	ID         string
	ProviderID string
	// Addresses maps an address to its node address type: "ExternalIP",
	// "InternalIP", "Hostname", "ExternalDNS" or "InternalDNS".
	Addresses map[string]string
	Status    InstanceStatus
}

// InstanceStatus is machine-controller's instance.Status.
type InstanceStatus string

// The instance statuses.
const (
	StatusRunning  InstanceStatus = "running"
	StatusDeleting InstanceStatus = "deleting"
	StatusDeleted  InstanceStatus = "deleted"
	StatusCreating InstanceStatus = "creating"
	StatusUnknown  InstanceStatus = "unknown"
)

// PersistentVolume is the part of a corev1.PersistentVolume a provider needs
// to find the volumes attached to a node.
type PersistentVolume struct {
	ObjectMeta `json:"metadata"`
	Spec       PersistentVolumeSpec   `json:"spec"`
	Status     PersistentVolumeStatus `json:"status"`
}

// PersistentVolumeSpec is the part of corev1.PersistentVolumeSpec a provider
// needs.
type PersistentVolumeSpec struct {
	Capacity         map[string]string `json:"capacity,omitempty"`
	CSI              *CSIVolumeSource  `json:"csi,omitempty"`
	ClaimRef         *ObjectReference  `json:"claimRef,omitempty"`
	StorageClassName string            `json:"storageClassName,omitempty"`
	NodeAffinity     json.RawMessage   `json:"nodeAffinity,omitempty"`
	AccessModes      []string          `json:"accessModes,omitempty"`
}

// CSIVolumeSource is corev1.CSIPersistentVolumeSource's identifying part.
type CSIVolumeSource struct {
	Driver           string            `json:"driver"`
	VolumeHandle     string            `json:"volumeHandle"`
	FSType           string            `json:"fsType,omitempty"`
	VolumeAttributes map[string]string `json:"volumeAttributes,omitempty"`
}

// ObjectReference is the part of corev1.ObjectReference a provider needs.
type ObjectReference struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// PersistentVolumeStatus is corev1.PersistentVolumeStatus's phase.
type PersistentVolumeStatus struct {
	Phase string `json:"phase,omitempty"`
}
