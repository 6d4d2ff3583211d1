// Package cloud defines the provider contract of machine-controller: the
// Provider interface, exactly as machine-controller's pkg/cloudprovider/cloud
// has it, and a context-aware variant with adapters both ways.
//
// A provider loaded from a .wasm file by package runtime satisfies Provider,
// so code written against machine-controller's interface works unchanged.
package cloud

import (
	"context"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"

	"k8s.io/apimachinery/pkg/types"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
)

// Provider exposed all required functions to interact with a cloud provider.
// It is machine-controller's interface, unchanged.
type Provider interface {
	// AddDefaults will read the MachineSpec and apply defaults for provider specific fields
	AddDefaults(spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error)

	// Validate validates the given machine's specification.
	//
	// In case of any error a "terminal" error should be set,
	// See v1alpha1.MachineStatus for more info
	Validate(machinespec clusterv1alpha1.MachineSpec) error

	// Get gets a node that is associated with the given machine.
	//
	// Note that this method can return what we call a "terminal" error,
	// which indicates that a manual interaction is required to recover from this state.
	// See v1alpha1.MachineStatus for more info and TerminalError type
	//
	// In case the instance cannot be found, errors.ErrInstanceNotFound will be returned
	Get(machine *clusterv1alpha1.Machine) (instance.Instance, error)

	// GetCloudConfig will return the cloud provider specific cloud-config, which gets consumed by the kubelet
	GetCloudConfig(spec clusterv1alpha1.MachineSpec) (config string, name string, err error)

	// Create creates a cloud instance according to the given machine
	Create(machine *clusterv1alpha1.Machine, data *MachineCreateDeleteData, userdata string) (instance.Instance, error)

	// Delete deletes the instance and all associated ressources
	// This will always be called on machine deletion, the implemention must check if there is actually
	// something to delete and just do nothing if there isn't
	// In case the instance is already gone, nil will be returned
	Delete(machine *clusterv1alpha1.Machine, data *MachineCreateDeleteData) error

	// MachineMetricsLabels returns labels used for the Prometheus metrics
	// about created machines, e.g. instance type, instance size, region
	// or whatever the provider deems interesting. Should always return
	// a "size" label.
	MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error)

	// MigrateUID is called when the controller migrates types and the UID of the machine object changes
	// All cloud providers that use Machine.UID to uniquely identify resources must implement this
	MigrateUID(machine *clusterv1alpha1.Machine, new types.UID) error
}

// MachineUpdater defines a function to persist an update to a machine
type MachineUpdater func(*clusterv1alpha1.Machine, func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error)

// MachineCreateDeleteData is the struct the cloud providers get when creating or deleting an instance
type MachineCreateDeleteData struct {
	Updater  MachineUpdater
	PVLister listerscorev1.PersistentVolumeLister
}

// ContextProvider is Provider with a context.Context as first argument of
// every method. The seed interface has none, so a caller of Provider cannot
// cancel a call or give it a deadline; ContextProvider can, and a wasm-backed
// provider honours both: a cancelled call stops the guest.
type ContextProvider interface {
	AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error)
	Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec) error
	Get(ctx context.Context, machine *clusterv1alpha1.Machine) (instance.Instance, error)
	GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec) (config string, name string, err error)
	Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *MachineCreateDeleteData, userdata string) (instance.Instance, error)
	Delete(ctx context.Context, machine *clusterv1alpha1.Machine, data *MachineCreateDeleteData) error
	MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine) (map[string]string, error)
	MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID) error
}

// WithoutContext adapts a ContextProvider to Provider. Every call runs with
// the context returned by ctx (context.Background when ctx is nil): use it to
// tie calls to a controller's lifetime.
func WithoutContext(p ContextProvider, ctx func() context.Context) Provider {
	if ctx == nil {
		ctx = context.Background
	}
	return &withoutContext{p: p, ctx: ctx}
}

type withoutContext struct {
	p   ContextProvider
	ctx func() context.Context
}

func (w *withoutContext) AddDefaults(spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return w.p.AddDefaults(w.ctx(), spec)
}
func (w *withoutContext) Validate(spec clusterv1alpha1.MachineSpec) error {
	return w.p.Validate(w.ctx(), spec)
}
func (w *withoutContext) Get(m *clusterv1alpha1.Machine) (instance.Instance, error) {
	return w.p.Get(w.ctx(), m)
}
func (w *withoutContext) GetCloudConfig(spec clusterv1alpha1.MachineSpec) (string, string, error) {
	return w.p.GetCloudConfig(w.ctx(), spec)
}
func (w *withoutContext) Create(m *clusterv1alpha1.Machine, data *MachineCreateDeleteData, userdata string) (instance.Instance, error) {
	return w.p.Create(w.ctx(), m, data, userdata)
}
func (w *withoutContext) Delete(m *clusterv1alpha1.Machine, data *MachineCreateDeleteData) error {
	return w.p.Delete(w.ctx(), m, data)
}
func (w *withoutContext) MachineMetricsLabels(m *clusterv1alpha1.Machine) (map[string]string, error) {
	return w.p.MachineMetricsLabels(w.ctx(), m)
}
func (w *withoutContext) MigrateUID(m *clusterv1alpha1.Machine, uid types.UID) error {
	return w.p.MigrateUID(w.ctx(), m, uid)
}

// WithContext adapts a native Provider to ContextProvider. A native provider
// cannot be interrupted, so the adapter only refuses to start a call whose
// context is already done; a running call completes.
func WithContext(p Provider) ContextProvider { return &withContext{p: p} }

type withContext struct{ p Provider }

func (w *withContext) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	if err := ctx.Err(); err != nil {
		return spec, err
	}
	return w.p.AddDefaults(spec)
}
func (w *withContext) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.p.Validate(spec)
}
func (w *withContext) Get(ctx context.Context, m *clusterv1alpha1.Machine) (instance.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.p.Get(m)
}
func (w *withContext) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	return w.p.GetCloudConfig(spec)
}
func (w *withContext) Create(ctx context.Context, m *clusterv1alpha1.Machine, data *MachineCreateDeleteData, userdata string) (instance.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.p.Create(m, data, userdata)
}
func (w *withContext) Delete(ctx context.Context, m *clusterv1alpha1.Machine, data *MachineCreateDeleteData) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.p.Delete(m, data)
}
func (w *withContext) MachineMetricsLabels(ctx context.Context, m *clusterv1alpha1.Machine) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.p.MachineMetricsLabels(m)
}
func (w *withContext) MigrateUID(ctx context.Context, m *clusterv1alpha1.Machine, uid types.UID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.p.MigrateUID(m, uid)
}
