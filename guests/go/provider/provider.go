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
// failure the controller should retry. Delete of a cloud that deletes
// asynchronously returns DeletionInProgress until the instance is gone
// (declare it with AsyncDelete), and nil once it is.
//
// A provider may also implement MetricsReporter, the optional method
// SetMetricsForMachines; one that does not reports no metrics.
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

// AsyncDelete declares abi.CapAsyncDelete: the provider's Delete may
// return DeletionInProgress, which the SDK then reports as the ABI's
// IN_PROGRESS status (machine-controller's Cleanup returning false: call
// again). It is a protocol bit, not a permission: every host that knows
// it grants it, and a host that does not refuses the module at load.
// Without it, DeletionInProgress is reported as a retriable error.
func AsyncDelete() Option { return Needs(abi.CapAsyncDelete) }

// MetricsReporter is the optional method SetMetricsForMachines of
// machine-controller's current contract. The host calls it with every
// Machine the provider serves (periodically, without Secrets or a cloud
// context: compute the metrics from the Machines themselves) and exposes
// the samples it returns, which replace those of the previous call, to
// Prometheus as wasmprov_guest_<provider>_<name>. A provider that does not
// implement it reports no samples.
//
// The host checks the samples (abi/SPEC.md §4.3): at most 1000 series;
// names matching [a-zA-Z_][a-zA-Z0-9_]* of at most 128 bytes; at most 16
// labels, none starting with "__", values of at most 256 bytes; finite
// values, counters not negative; the series of one name agreeing on type,
// help and label names; no series twice. A sample set that breaks one is
// refused as a whole.
type MetricsReporter interface {
	SetMetricsForMachines(ctx context.Context, machines []Machine) ([]Metric, error)
}

// Metric is one metric sample: abi.MetricSample, whose Type is
// abi.MetricGauge or abi.MetricCounter.
type Metric = abi.MetricSample

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
