package cloudprovider

import (
	"context"
	"errors"
	"log/slog"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	cloudprovidertypes "github.com/wasmprov/wasmprov/cloudprovider/types"
	"github.com/wasmprov/wasmprov/provider"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
)

// Option configures New.
type Option func(*options)

type options struct {
	objects provider.ObjectReader
}

// WithObjectReader sets where config_var reads Secrets and ConfigMaps
// when a call has no ProviderData.Client (AddDefaults, Validate,
// MigrateUID, SetMetricsForMachines, or a caller passing none). Unset:
// the runtime's Kubernetes client (runtime.WithKubernetesClient).
func WithObjectReader(r provider.ObjectReader) Option {
	return func(o *options) { o.objects = r }
}

// New returns p as machine-controller's current Provider. p is usually a
// *runtime.Provider or a *registry.Handle (which follows reloads). A nil p
// is a programming error and panics here, not at the first call.
func New(p provider.Interface, opts ...Option) cloudprovidertypes.Provider {
	if p == nil {
		panic("cloudprovider.New: nil provider.Interface")
	}
	a := &adapter{p: p}
	for _, o := range opts {
		o(&a.o)
	}
	return a
}

// adapter is machine-controller's current contract over a
// provider.Interface.
type adapter struct {
	p provider.Interface
	o options
}

var _ cloudprovidertypes.Provider = (*adapter)(nil)

func (a *adapter) AddDefaults(log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return a.p.AddDefaults(context.Background(), spec, a.data(log, nil))
}

func (a *adapter) Validate(ctx context.Context, log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) error {
	return a.p.Validate(ctx, spec, a.data(log, nil))
}

func (a *adapter) Get(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData) (instance.Instance, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return a.p.Get(ctx, machine, a.data(log, data))
}

func (a *adapter) Create(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData, userdata string) (instance.Instance, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return a.p.Create(ctx, machine, a.data(log, data), userdata)
}

func (a *adapter) Cleanup(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData) (bool, error) {
	if err := checkMachine(machine); err != nil {
		return false, err
	}
	return a.p.Cleanup(ctx, machine, a.data(log, data))
}

func (a *adapter) MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return a.p.MachineMetricsLabels(context.Background(), machine, a.data(nil, nil))
}

func (a *adapter) MigrateUID(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, newUID types.UID) error {
	if err := checkMachine(machine); err != nil {
		return err
	}
	return a.p.MigrateUID(ctx, machine, newUID, a.data(log, nil))
}

func (a *adapter) SetMetricsForMachines(machines clusterv1alpha1.MachineList) error {
	return a.p.SetMetricsForMachines(context.Background(), machines, a.data(nil, nil))
}

// ErrNilMachine is returned by the methods that take a Machine when given
// nil: machine-controller never does, an embedder's bug must not panic.
var ErrNilMachine = errors.New("cloudprovider: nil machine")

func checkMachine(m *clusterv1alpha1.Machine) error {
	if m == nil {
		return ErrNilMachine
	}
	return nil
}

// data builds the host side of one call from the caller's logger and
// ProviderData (see the package documentation for what nil means).
func (a *adapter) data(log *zap.SugaredLogger, pd *cloudprovidertypes.ProviderData) *provider.Data {
	d := &provider.Data{Objects: a.o.objects}
	if log != nil {
		d.Logger = slog.New(newZapHandler(log.Desugar()))
	}
	if pd == nil {
		return d
	}
	if update := pd.Update; update != nil {
		d.Update = func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			// Upstream's updater re-reads the Machine into m, applies the
			// modifier and stores m: on return m is the stored object.
			if err := update(m, cloudprovidertypes.MachineModifier(modify)); err != nil {
				return nil, err
			}
			return m, nil
		}
	}
	if pd.Client != nil {
		c := clientObjects{pd.Client}
		d.Objects, d.ListPersistentVolumes = c, c.listPersistentVolumes
	}
	return d
}
