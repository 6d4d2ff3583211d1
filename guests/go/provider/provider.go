package provider

import (
	"context"

	"github.com/wasmprov/wasmprov/abi"
)

// Provider is the interface a guest implements: machine-controller's
// cloud.Provider with a context and the SDK's light types. Create and Delete
// reach MachineCreateDeleteData through UpdateMachine and
// ListPersistentVolumes.
//
// Return ErrInstanceNotFound (or wrap it) when the instance does not exist, a
// *TerminalError (see Terminal) when a person must act, any other error for a
// failure the controller should retry.
type Provider interface {
	AddDefaults(ctx context.Context, spec MachineSpec) (MachineSpec, error)
	Validate(ctx context.Context, spec MachineSpec) error
	Get(ctx context.Context, machine *Machine) (*Instance, error)
	GetCloudConfig(ctx context.Context, spec MachineSpec) (config string, name string, err error)
	Create(ctx context.Context, machine *Machine, userdata string) (*Instance, error)
	Delete(ctx context.Context, machine *Machine) error
	MachineMetricsLabels(ctx context.Context, machine *Machine) (map[string]string, error)
	MigrateUID(ctx context.Context, machine *Machine, newUID string) error
}

// Option configures Register.
type Option func(*registration)

// Needs declares the capabilities the provider uses. Host functions of
// undeclared capabilities fail with abi.ErrnoNotDeclared, so declare
// everything the provider calls: the host's policy decides what is granted,
// and `wasmprov inspect` shows the declaration to whoever installs the
// provider.
func Needs(caps ...abi.Capability) Option {
	return func(r *registration) {
		for _, c := range caps {
			r.caps |= c
		}
	}
}

type registration struct {
	p    Provider
	caps abi.Capability
}

var registered registration

// Register installs p as the module's provider. Call it once, from init.
// Logging (abi.CapLog) is always declared.
func Register(p Provider, opts ...Option) {
	r := registration{p: p, caps: abi.CapLog}
	for _, o := range opts {
		o(&r)
	}
	registered = r
}

// Capabilities returns the capabilities declared by Register.
func Capabilities() abi.Capability { return registered.caps }
