package cloudprovider

import (
	"context"
	"errors"
	"log/slog"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	cloudprovidertypes "github.com/wasmprov/wasmprov/cloudprovider/types"
	"github.com/wasmprov/wasmprov/runtime"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
)

// Option configures New.
type Option func(*options)

type options struct {
	objects runtime.ObjectReader
}

// WithObjectReader sets where config_var reads Secrets and ConfigMaps
// when a call has no ProviderData.Client (AddDefaults, Validate,
// MigrateUID, SetMetricsForMachines, or a caller passing none). Unset:
// the runtime's Kubernetes client (runtime.WithKubernetesClient).
func WithObjectReader(r runtime.ObjectReader) Option {
	return func(o *options) { o.objects = r }
}

// New returns calls as machine-controller's current Provider. calls is
// usually (*runtime.Provider).Calls() or (*registry.Handle).Calls(). A nil
// calls is a programming error and panics here, not at the first call.
func New(calls runtime.Calls, opts ...Option) cloudprovidertypes.Provider {
	if calls == nil {
		panic("cloudprovider.New: nil runtime.Calls")
	}
	p := &provider{calls: calls}
	for _, o := range opts {
		o(&p.o)
	}
	return p
}

type provider struct {
	calls runtime.Calls
	o     options
}

var _ cloudprovidertypes.Provider = (*provider)(nil)

func (p *provider) AddDefaults(log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return p.calls.AddDefaults(context.Background(), spec, p.data(log, nil))
}

func (p *provider) Validate(ctx context.Context, log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) error {
	return p.calls.Validate(ctx, spec, p.data(log, nil))
}

func (p *provider) Get(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData) (instance.Instance, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return p.calls.Get(ctx, machine, p.data(log, data))
}

func (p *provider) Create(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData, userdata string) (instance.Instance, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return p.calls.Create(ctx, machine, p.data(log, data), userdata)
}

func (p *provider) Cleanup(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *cloudprovidertypes.ProviderData) (bool, error) {
	if err := checkMachine(machine); err != nil {
		return false, err
	}
	done, err := p.calls.Cleanup(ctx, machine, p.data(log, data))
	if errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		// Nothing left to delete: machine-controller's providers answer
		// true here, and an error would hold the Machine's finalizer.
		return true, nil
	}
	return done, err
}

func (p *provider) MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error) {
	if err := checkMachine(machine); err != nil {
		return nil, err
	}
	return p.calls.MachineMetricsLabels(context.Background(), machine, p.data(nil, nil))
}

func (p *provider) MigrateUID(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, newUID types.UID) error {
	if err := checkMachine(machine); err != nil {
		return err
	}
	return p.calls.MigrateUID(ctx, machine, newUID, p.data(log, nil))
}

func (p *provider) SetMetricsForMachines(machines clusterv1alpha1.MachineList) error {
	return p.calls.SetMetricsForMachines(context.Background(), machines, p.data(nil, nil))
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
func (p *provider) data(log *zap.SugaredLogger, pd *cloudprovidertypes.ProviderData) *runtime.CallData {
	d := &runtime.CallData{Objects: p.o.objects}
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
