// Package instance is what a provider reports about a cloud machine.
package instance

import corev1 "k8s.io/api/core/v1"

// Instance is a machine on the cloud provider.
type Instance interface {
	Name() string
	ID() string
	ProviderID() string
	Addresses() map[string]corev1.NodeAddressType
	Status() Status
}

// Status is an instance's state.
type Status string

// The states.
const (
	StatusRunning  Status = "running"
	StatusDeleting Status = "deleting"
	StatusDeleted  Status = "deleted"
	StatusCreating Status = "creating"
	StatusUnknown  Status = "unknown"
)
