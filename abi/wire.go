package abi

import "encoding/json"

// The wire types below are the JSON documents exchanged through the host
// functions and the method outputs. Field names are lowerCamelCase, as in
// Kubernetes objects.

// Instance is the output of Get and Create: machine-controller's
// instance.Instance as data.
type Instance struct {
	Name       string `json:"name"`
	ID         string `json:"id"`
	ProviderID string `json:"providerID,omitempty"`
	// Addresses maps an address to its corev1.NodeAddressType
	// ("ExternalIP", "InternalIP", "Hostname", "ExternalDNS", "InternalDNS").
	Addresses map[string]string `json:"addresses,omitempty"`
	// Status is one of the InstanceStatus values.
	Status string `json:"status"`
}

// Instance status values, as machine-controller's instance.Status.
const (
	InstanceRunning  = "running"
	InstanceDeleting = "deleting"
	InstanceDeleted  = "deleted"
	InstanceCreating = "creating"
	InstanceUnknown  = "unknown"
)

// CloudConfig is the output of GetCloudConfig.
type CloudConfig struct {
	Config string `json:"config"`
	Name   string `json:"name"`
}

// HTTPRequest is the argument of http_do. Body is base64 in JSON.
type HTTPRequest struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
}

// HTTPResponse is the result of http_do. A response with any status code is
// a success of http_do; transport failures and policy denials are errnos.
type HTTPResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
}

// MachineUpdate is the argument of machine_update: a modification of the
// Machine that the host applies inside data.Updater. The host may apply it
// more than once (the updater retries on conflicts against a fresh copy), so
// each field is written to be idempotent. The result is the updated Machine.
type MachineUpdate struct {
	AddFinalizers    []string `json:"addFinalizers,omitempty"`
	RemoveFinalizers []string `json:"removeFinalizers,omitempty"`
	// Annotations and Labels set a key to a value, or remove it when the
	// value is null.
	Annotations map[string]*string `json:"annotations,omitempty"`
	Labels      map[string]*string `json:"labels,omitempty"`
	// ProviderID sets spec.providerID when non-nil.
	ProviderID *string `json:"providerID,omitempty"`
	// MergePatch is an RFC 7386 JSON merge patch applied to the Machine
	// after the fields above, for anything they do not cover. The host
	// refuses patches that change metadata.name, namespace or uid.
	MergePatch json.RawMessage `json:"mergePatch,omitempty"`
}

// PVListRequest is the argument of pv_list. The result is a
// PersistentVolumeList in the Kubernetes wire format ({"items":[...]}).
type PVListRequest struct {
	// LabelSelector in the Kubernetes string syntax; empty selects all.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// ConfigVarRequest is the argument of config_var. The result is the
// resolved value as UTF-8 ("true"/"false" for bools).
type ConfigVarRequest struct {
	// Type is "string" or "bool".
	Type string `json:"type"`
	// Var is a ConfigVarString or ConfigVarBool exactly as it appears in the
	// provider spec: a bare scalar or {value, secretKeyRef, configMapKeyRef}.
	Var json.RawMessage `json:"var"`
	// EnvFallback names a host environment variable used when the variable
	// resolves to the empty value. The host's policy must allow the name.
	EnvFallback string `json:"envFallback,omitempty"`
}

// Config var types.
const (
	ConfigVarTypeString = "string"
	ConfigVarTypeBool   = "bool"
)

// MetricSamples is the output of SetMetricsForMachines: the provider's
// metric samples for the Machines it was given, which replace the ones of
// its previous call. The host exposes them to Prometheus under the name
// wasmprov_guest_<provider>_<name> (SPEC.md §4.3).
type MetricSamples struct {
	Metrics []MetricSample `json:"metrics"`
}

// MetricSample is one series: a metric name, its labels and a value.
// Samples of one name must agree on type, help and label names.
type MetricSample struct {
	// Name matches [a-zA-Z_][a-zA-Z0-9_]*, without the host's prefix.
	Name string `json:"name"`
	Help string `json:"help,omitempty"`
	// Type is MetricGauge or MetricCounter.
	Type   string            `json:"type"`
	Labels map[string]string `json:"labels,omitempty"`
	// Value must be finite.
	Value float64 `json:"value"`
}

// Metric types of MetricSample.Type.
const (
	MetricGauge   = "gauge"
	MetricCounter = "counter"
)
