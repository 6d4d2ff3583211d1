package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WasmProvider is one cloud provider served to Machines from a WebAssembly
// module: where the module comes from, how it must be signed, the policy
// it runs under and its pool. Machines name it by spec.cloudProvider in
// their providerSpec.value.cloudProvider, exactly as they would name a
// compiled-in provider.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,shortName=wp
// +kubebuilder:subresource:status
type WasmProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WasmProviderSpec   `json:"spec"`
	Status WasmProviderStatus `json:"status,omitempty"`
}

// WasmProviderSpec is what the user asks for.
type WasmProviderSpec struct {
	// CloudProvider is the provider name Machines refer to
	// (providerSpec.value.cloudProvider): lower-case letters, digits, '-',
	// '_' and '.', at most 63 characters. Two WasmProviders claiming the
	// same name: the older one (creation time, then name) serves it, the
	// other reports Ready=False with reason Conflict.
	CloudProvider string `json:"cloudProvider"`

	// Source says where the module comes from; exactly one of its fields
	// is set.
	Source Source `json:"source"`

	// Verify is the signature policy the artifact must satisfy before it
	// may load (the verify block of an image entry: anyOf/allOf of
	// publicKey rules; see docs/DISTRIBUTION.md). Only for an image
	// source. Unset: no signature is required.
	// +kubebuilder:pruning:PreserveUnknownFields
	Verify *runtime.RawExtension `json:"verify,omitempty"`

	// Policy is the sandbox policy, with the fields of a policy file
	// (docs/REGISTRY.md). It is decoded strictly: an unknown field refuses
	// the version (status says which) rather than being dropped. Unset:
	// the runtime's default policy.
	// +kubebuilder:pruning:PreserveUnknownFields
	Policy *runtime.RawExtension `json:"policy,omitempty"`

	// Pool sizes the provider's instance pool; a field set here overrides
	// the same field of Policy.
	Pool *Pool `json:"pool,omitempty"`

	// RevisionHistoryLimit is how many good versions status.revisions
	// keeps (and the content store keeps, so that pinning one of them back
	// needs no pull). Zero or unset means 5.
	RevisionHistoryLimit int32 `json:"revisionHistoryLimit,omitempty"`
}

// Source is where a provider module comes from. Exactly one field is set.
type Source struct {
	// Image is an OCI artifact in a registry (`wasmprov push`).
	Image *ImageSource `json:"image,omitempty"`
	// ConfigMap holds the module in a ConfigMap's binaryData, for
	// clusters without a registry.
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`
	// URL is an https:// (or, for loopback, http://) address serving the
	// module, for clusters without a registry.
	URL *URLSource `json:"url,omitempty"`
}

// PullPolicy says when an image reference is resolved again.
type PullPolicy string

// Pull policies, as for a Pod's images.
const (
	// PullIfNotPresent resolves a tag once and pulls only what the
	// content store lacks; the default for a reference by digest.
	PullIfNotPresent PullPolicy = "IfNotPresent"
	// PullAlways resolves the tag again at every poll; a new digest is a
	// new version. The default for a reference by tag.
	PullAlways PullPolicy = "Always"
)

// ImageSource is a provider module published as an OCI artifact.
type ImageSource struct {
	// Ref is registry/repository:tag or registry/repository@sha256:….
	Ref string `json:"ref"`
	// PullPolicy: Always (the default for a tag) or IfNotPresent (the
	// default for a digest).
	PullPolicy PullPolicy `json:"pullPolicy,omitempty"`
	// PullSecret is a kubernetes.io/dockerconfigjson Secret with the
	// registry's credentials. Unset: the controller's own credentials.
	PullSecret *corev1.SecretReference `json:"pullSecret,omitempty"`
}

// ConfigMapSource is a provider module stored in a ConfigMap.
type ConfigMapSource struct {
	// Namespace and Name of the ConfigMap.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Key of the module in the ConfigMap's binaryData.
	Key string `json:"key"`
	// SHA256 is the module's digest, hex (mandatory: a ConfigMap carries
	// no signature, so the digest is what pins the content).
	SHA256 string `json:"sha256"`
}

// URLSource is a provider module served over HTTP.
type URLSource struct {
	// URL of the module. https:// unless the host is a loopback address.
	URL string `json:"url"`
	// SHA256 is the module's digest, hex (mandatory).
	SHA256 string `json:"sha256"`
}

// Pool sizes a provider's instance pool (zero fields keep the policy's
// value or the runtime default).
type Pool struct {
	// Size caps concurrent instances, hence concurrent calls (default 4).
	Size int32 `json:"size,omitempty"`
	// Prewarm is how many instances are started before a version serves
	// (default 1).
	Prewarm int32 `json:"prewarm,omitempty"`
	// MaxCallsPerInstance recycles an instance after that many calls
	// (default 10000; -1 never).
	MaxCallsPerInstance int32 `json:"maxCallsPerInstance,omitempty"`
	// IdleTimeout closes an instance idle that long, down to none, so a
	// rarely called provider holds no memory between calls; with it
	// Prewarm defaults to 0 (no instance until the first call). Unset
	// keeps the policy's value, or never closes idle instances.
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// Condition types of a WasmProvider.
const (
	// ConditionPulled: the artifact of the spec was fetched (True) or
	// could not be (False: unreachable registry, unknown digest, bad
	// credentials, a digest mismatch of a ConfigMap or URL source).
	ConditionPulled = "Pulled"
	// ConditionVerified: the artifact satisfied spec.verify (True), did
	// not (False), or no verification was asked for (True, reason
	// NotRequired).
	ConditionVerified = "Verified"
	// ConditionReady: a version of this WasmProvider serves calls. It
	// stays True when a newer spec is refused: the previous version keeps
	// serving and Degraded says why.
	ConditionReady = "Ready"
	// ConditionDegraded: the spec's current version is not the one
	// serving (refused, or not loaded yet); False when it is.
	ConditionDegraded = "Degraded"
)

// Condition reasons. Messages carry the cause without secrets, and are
// deterministic for a given cause, so that retries do not rewrite status.
const (
	ReasonPulled          = "Pulled"
	ReasonPullFailed      = "PullFailed"
	ReasonDigestMismatch  = "DigestMismatch"
	ReasonVerified        = "Verified"
	ReasonNotRequired     = "NotRequired"
	ReasonVerifyFailed    = "VerificationFailed"
	ReasonServing         = "Serving"
	ReasonIncompatible    = "Incompatible"  // module metadata or ABI needs another host
	ReasonInvalidModule   = "InvalidModule" // does not compile or instantiate
	ReasonSmokeTestFailed = "SmokeTestFailed"
	ReasonInvalidSpec     = "InvalidSpec" // e.g. an unknown policy field
	ReasonConflict        = "Conflict"    // another WasmProvider serves the name
	ReasonLoadFailed      = "LoadFailed"  // any other refusal
	ReasonUpToDate        = "UpToDate"
	ReasonPreviousServing = "PreviousVersionServing"
	ReasonNothingServing  = "NothingServing"
	ReasonNotLoaded       = "NotLoaded"
	// ReasonStale: the tag could not be resolved (the registry is
	// unreachable), and what serves is the digest it last resolved to,
	// from the local store.
	ReasonStale = "Stale"
)

// WasmProviderStatus is what the controller observed. Only the leader
// writes it.
type WasmProviderStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Pulled, Verified, Ready, Degraded.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Serving is the version serving calls now.
	Serving *Revision `json:"serving,omitempty"`
	// LastRejected is the last version refused, and why.
	LastRejected *Rejection `json:"lastRejected,omitempty"`
	// Revisions are the last good versions, newest first, at most
	// spec.revisionHistoryLimit: pinning spec.source back to one of them
	// loads it from the content store without a pull.
	Revisions []Revision `json:"revisions,omitempty"`
}

// Revision is one version that served.
type Revision struct {
	// Digest identifies the artifact: the OCI manifest digest for an image
	// source, "sha256:<module digest>" for a ConfigMap or URL source.
	Digest string `json:"digest"`
	// Ref is the source as the spec named it (the image reference, the
	// ConfigMap namespace/name/key, or the URL).
	Ref string `json:"ref,omitempty"`
	// ModuleSHA256 is the digest of the module itself, hex.
	ModuleSHA256 string `json:"moduleSHA256,omitempty"`
	// Since is when this version started serving.
	Since metav1.Time `json:"since,omitempty"`
}

// Rejection is a version that was refused.
type Rejection struct {
	// Digest of what was refused, when known (a pull that failed has none).
	Digest string `json:"digest,omitempty"`
	// Ref is the source as the spec named it.
	Ref string `json:"ref,omitempty"`
	// Reason is one of the Reason constants; Message the cause.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Time of the refusal.
	Time metav1.Time `json:"time,omitempty"`
}

// WasmProviderList is a list of WasmProviders.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WasmProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WasmProvider `json:"items"`
}
