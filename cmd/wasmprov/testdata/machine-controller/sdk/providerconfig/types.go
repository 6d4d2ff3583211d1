// Package providerconfig is the providerSpec's cloud-independent part: the
// CloudProvider key and the ConfigVar types with their resolver.
package providerconfig

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// CloudProvider names a provider in machine-controller's providers map.
type CloudProvider string

// GlobalObjectKeySelector is a key of an object in any namespace.
type GlobalObjectKeySelector struct {
	corev1.ObjectReference `json:",inline"`
	Key                    string `json:"key,omitempty"`
}

// GlobalSecretKeySelector is a key of a Secret.
type GlobalSecretKeySelector GlobalObjectKeySelector

// GlobalConfigMapKeySelector is a key of a ConfigMap.
type GlobalConfigMapKeySelector GlobalObjectKeySelector

// ConfigVarString is a string given inline or by reference.
type ConfigVarString struct {
	Value           string                     `json:"value,omitempty"`
	SecretKeyRef    GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// ConfigVarBool is a bool given inline or by reference.
type ConfigVarBool struct {
	Value           *bool                      `json:"value,omitempty"`
	SecretKeyRef    GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// ConfigVarResolver resolves ConfigVars, reading Secrets and ConfigMaps.
type ConfigVarResolver interface {
	GetDurationValue(configVar ConfigVarString) (time.Duration, error)
	GetDurationValueOrDefault(configVar ConfigVarString, defaultDuration time.Duration) (time.Duration, error)
	GetStringValue(configVar ConfigVarString) (string, error)
	GetStringValueOrEnv(configVar ConfigVarString, envVarName string) (string, error)
	GetBoolValue(configVar ConfigVarBool) (bool, bool, error)
	GetBoolValueOrEnv(configVar ConfigVarBool, envVarName string) (bool, error)
}
