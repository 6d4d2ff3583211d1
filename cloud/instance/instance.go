// Package instance is machine-controller's pkg/cloudprovider/instance: what a
// provider reports about the cloud machine behind a Machine.
package instance

import corev1 "k8s.io/api/core/v1"

// Instance represents a instance on the cloud provider
type Instance interface {
	// Name returns the instance name.
	Name() string
	// ID returns the instance identifier.
	ID() string
	// ProviderID returns the expected providerID for the instance
	ProviderID() string
	// Addresses returns a list of addresses associated with the instance.
	Addresses() map[string]corev1.NodeAddressType
	// Status returns the instance status.
	Status() Status
}

// Status represents the instance status.
type Status string

// The statuses an instance can have, as machine-controller defines them.
const (
	StatusRunning  Status = "running"
	StatusDeleting Status = "deleting"
	StatusDeleted  Status = "deleted"
	StatusCreating Status = "creating"
	StatusUnknown  Status = "unknown"
)

// Static is an Instance whose values are fixed: what a wasm provider's Get
// or Create returns once the guest's answer is decoded. Its exported fields
// make it easy to build in tests and to compare.
type Static struct {
	InstanceName       string
	InstanceID         string
	InstanceProviderID string
	InstanceAddresses  map[string]corev1.NodeAddressType
	InstanceStatus     Status
}

var _ Instance = (*Static)(nil)

// Name implements Instance.
func (s *Static) Name() string { return s.InstanceName }

// ID implements Instance.
func (s *Static) ID() string { return s.InstanceID }

// ProviderID implements Instance.
func (s *Static) ProviderID() string { return s.InstanceProviderID }

// Addresses implements Instance. The map is the instance's own: callers must
// not modify it.
func (s *Static) Addresses() map[string]corev1.NodeAddressType { return s.InstanceAddresses }

// Status implements Instance.
func (s *Static) Status() Status { return s.InstanceStatus }
