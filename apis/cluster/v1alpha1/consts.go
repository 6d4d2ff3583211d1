package v1alpha1

// The types and constants in this file mirror upstream
// sdk/apis/cluster/common/consts.go. Upstream keeps them in an unversioned
// "common" package; on the wire they are plain strings, so moving them into
// this package changes nothing for JSON.

// MachineStatusError is the machine readable reason a Machine is in a
// terminal error state (MachineStatus.ErrorReason).
type MachineStatusError string

const (
	// InvalidConfigurationMachineError means that the combination of
	// configuration in the MachineSpec is not supported by this cluster.
	// This is not a transient error, but indicates a state that must be
	// fixed before progress can be made.
	//
	// Example: the ProviderSpec specifies an instance type that doesn't exist.
	InvalidConfigurationMachineError MachineStatusError = "InvalidConfiguration"

	// UnsupportedChangeMachineError means that the MachineSpec has been
	// updated in a way that is not supported for reconciliation on this
	// cluster. The spec may be valid, but the controller cannot change the
	// real world state to match it.
	UnsupportedChangeMachineError MachineStatusError = "UnsupportedChange"

	// InsufficientResourcesMachineError generally refers to exceeding one's
	// quota in a cloud provider, or running out of physical machines in an
	// on-premise environment.
	InsufficientResourcesMachineError MachineStatusError = "InsufficientResources"

	// CreateMachineError means that there was an error while trying to
	// create a Node to match this Machine.
	CreateMachineError MachineStatusError = "CreateError"

	// UpdateMachineError means that there was an error while trying to
	// update a Node that this Machine represents.
	UpdateMachineError MachineStatusError = "UpdateError"

	// DeleteMachineError means that an error was encountered while trying to
	// delete the Node that this Machine represents.
	DeleteMachineError MachineStatusError = "DeleteError"

	// JoinClusterTimeoutMachineError means that the machine did not join
	// the cluster as a new node within the expected timeframe after instance
	// creation at the provider succeeded.
	//
	// Upstream declares this one as an untyped string constant (an accident
	// of its const block); it is typed here like its siblings. The value is
	// identical, so the wire format is unaffected.
	JoinClusterTimeoutMachineError MachineStatusError = "JoinClusterTimeoutError"
)

// MachineSetStatusError is the machine readable reason a MachineSet is in a
// terminal error state (MachineSetStatus.ErrorReason).
type MachineSetStatusError string

const (
	// InvalidConfigurationMachineSetError means that the combination of
	// configuration in the MachineTemplateSpec is not supported by this
	// cluster. This is not a transient error.
	InvalidConfigurationMachineSetError MachineSetStatusError = "InvalidConfiguration"
)

// MachineDeploymentStrategyType is the kind of strategy a MachineDeployment
// uses to replace old Machines with new ones.
type MachineDeploymentStrategyType string

const (
	// RollingUpdateMachineDeploymentStrategyType replaces the old MachineSet
	// by the new one using a rolling update, i.e. gradually scales down the
	// old MachineSet and scales up the new one.
	RollingUpdateMachineDeploymentStrategyType MachineDeploymentStrategyType = "RollingUpdate"
)
