// Package common holds the Machine status error reasons, shared by the
// versioned API packages.
package common

// MachineStatusError is the reason of a Machine's terminal error.
type MachineStatusError string

// The reasons a provider may give.
const (
	InvalidConfigurationMachineError  MachineStatusError = "InvalidConfiguration"
	UnsupportedChangeMachineError     MachineStatusError = "UnsupportedChange"
	InsufficientResourcesMachineError MachineStatusError = "InsufficientResources"
	CreateMachineError                MachineStatusError = "CreateError"
	UpdateMachineError                MachineStatusError = "UpdateError"
	DeleteMachineError                MachineStatusError = "DeleteError"
)
