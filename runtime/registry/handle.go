package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"

	"k8s.io/apimachinery/pkg/types"
)

// Handle is a provider of a Registry by name. It implements
// provider.Interface and sends every call to the version serving when the
// call starts. A call that races with a swap and reaches the replaced
// version after it stopped taking calls (nothing ran) is sent again to the
// new version, so a reload fails no call. Each version's policy bounds
// its calls.
type Handle struct {
	e *entry
}

var _ provider.Interface = (*Handle)(nil)

func newHandle(e *entry) *Handle { return &Handle{e: e} }

// Name is the provider's name.
func (h *Handle) Name() string { return h.e.name }

// Current returns the version serving now, or nil if the provider has been
// removed. Prefer calling through the Handle, which follows reloads.
func (h *Handle) Current() *runtime.Provider { return h.e.cur.Load() }

// SHA256 is the digest of the version serving now ("" if removed).
func (h *Handle) SHA256() string {
	if p := h.e.cur.Load(); p != nil {
		return p.SHA256()
	}
	return ""
}

// MetricSamples returns the samples of the serving version's last
// SetMetricsForMachines (runtime.Provider.MetricSamples): after a reload,
// none until the next call.
func (h *Handle) MetricSamples() []runtime.MetricSample {
	if p := h.e.cur.Load(); p != nil {
		return p.MetricSamples()
	}
	return nil
}

// route runs fn on the current version, again on the next one if the
// version it got was closed by a swap before the call could start.
func (h *Handle) route(ctx context.Context, m abi.Method, fn func(*runtime.Provider) error) error {
	for {
		p := h.e.cur.Load()
		if p == nil {
			return &runtime.CallError{Provider: h.e.name, Method: m, Class: runtime.ClassTransient,
				Err: fmt.Errorf("%w: %q", ErrProviderNotFound, h.e.name)}
		}
		err := fn(p)
		if err == nil || !errors.Is(err, runtime.ErrProviderClosed) || ctx.Err() != nil {
			return err
		}
		if h.e.cur.Load() == p {
			return err // closed without a successor: the registry is closing
		}
	}
}

// The provider.Interface methods: each runs on the serving version (route).

func (h *Handle) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) (out clusterv1alpha1.MachineSpec, err error) {
	out = spec
	err = h.route(ctx, abi.MethodAddDefaults, func(p *runtime.Provider) (err error) {
		out, err = p.AddDefaults(ctx, spec, data)
		return err
	})
	return out, err
}

func (h *Handle) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) error {
	return h.route(ctx, abi.MethodValidate, func(p *runtime.Provider) error { return p.Validate(ctx, spec, data) })
}

func (h *Handle) Get(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (out instance.Instance, err error) {
	err = h.route(ctx, abi.MethodGet, func(p *runtime.Provider) (err error) {
		out, err = p.Get(ctx, machine, data)
		return err
	})
	return out, err
}

func (h *Handle) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) (config, name string, err error) {
	err = h.route(ctx, abi.MethodGetCloudConfig, func(p *runtime.Provider) (err error) {
		config, name, err = p.GetCloudConfig(ctx, spec, data)
		return err
	})
	return config, name, err
}

func (h *Handle) Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data, userdata string) (out instance.Instance, err error) {
	err = h.route(ctx, abi.MethodCreate, func(p *runtime.Provider) (err error) {
		out, err = p.Create(ctx, machine, data, userdata)
		return err
	})
	return out, err
}

func (h *Handle) Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (done bool, err error) {
	err = h.route(ctx, abi.MethodDelete, func(p *runtime.Provider) (err error) {
		done, err = p.Cleanup(ctx, machine, data)
		return err
	})
	return done, err
}

func (h *Handle) MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (out map[string]string, err error) {
	err = h.route(ctx, abi.MethodMachineMetricsLabels, func(p *runtime.Provider) (err error) {
		out, err = p.MachineMetricsLabels(ctx, machine, data)
		return err
	})
	return out, err
}

func (h *Handle) MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID, data *provider.Data) error {
	return h.route(ctx, abi.MethodMigrateUID, func(p *runtime.Provider) error { return p.MigrateUID(ctx, machine, newUID, data) })
}

func (h *Handle) SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *provider.Data) error {
	return h.route(ctx, abi.MethodSetMetricsForMachines, func(p *runtime.Provider) error {
		return p.SetMetricsForMachines(ctx, machines, data)
	})
}
