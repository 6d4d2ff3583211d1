package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// provider names the embedded cloud.Provider of a Handle without exporting
// a field: its methods are promoted, the field is not.
type provider = cloud.Provider

// Handle is a provider of a Registry by name. It implements cloud.Provider
// (ContextProvider gives the context-aware view) and sends every call to
// the version serving when the call starts. A call that races with a swap
// and reaches the replaced version after it stopped taking calls (nothing
// ran) is sent again to the new version, so a reload fails no call.
//
// The cloud.Provider methods (AddDefaults, Validate, Get, GetCloudConfig,
// Create, Delete, MachineMetricsLabels, MigrateUID) are those of
// cloud.WithoutContext over the context-aware view: they run with
// context.Background(), and each version's policy bounds the call.
type Handle struct {
	provider // cloud.WithoutContext(h.ContextProvider(), nil)
	e        *entry
}

var _ cloud.Provider = (*Handle)(nil)

func newHandle(e *entry) *Handle {
	h := &Handle{e: e}
	h.provider = cloud.WithoutContext(h.ContextProvider(), nil)
	return h
}

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

// ContextProvider returns the handle as a cloud.ContextProvider.
func (h *Handle) ContextProvider() cloud.ContextProvider { return runtime.SeedProvider(handleCalls{h}) }

// Calls returns the handle in the contract-neutral form (runtime.Calls)
// that package cloudprovider adapts to machine-controller's current
// contract. Like every view of the handle, it follows reloads.
func (h *Handle) Calls() runtime.Calls { return handleCalls{h} }

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
func (h *Handle) route(ctx context.Context, m abi.Method, fn func(runtime.Calls) error) error {
	for {
		p := h.e.cur.Load()
		if p == nil {
			return &runtime.CallError{Provider: h.e.name, Method: m, Class: runtime.ClassTransient,
				Err: fmt.Errorf("%w: %q", ErrProviderNotFound, h.e.name)}
		}
		err := fn(p.Calls())
		if err == nil || !errors.Is(err, runtime.ErrProviderClosed) || ctx.Err() != nil {
			return err
		}
		if h.e.cur.Load() == p {
			return err // closed without a successor: the registry is closing
		}
	}
}

// handleCalls is the Handle's runtime.Calls: each method routes to the
// serving version.
type handleCalls struct{ h *Handle }

var _ runtime.Calls = handleCalls{}

// Name is the provider's name, for errors built over the handle's Calls.
func (c handleCalls) Name() string { return c.h.e.name }

func (c handleCalls) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *runtime.CallData) (out clusterv1alpha1.MachineSpec, err error) {
	out = spec
	err = c.h.route(ctx, abi.MethodAddDefaults, func(p runtime.Calls) (err error) {
		out, err = p.AddDefaults(ctx, spec, data)
		return err
	})
	return out, err
}

func (c handleCalls) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *runtime.CallData) error {
	return c.h.route(ctx, abi.MethodValidate, func(p runtime.Calls) error { return p.Validate(ctx, spec, data) })
}

func (c handleCalls) Get(ctx context.Context, machine *clusterv1alpha1.Machine, data *runtime.CallData) (out instance.Instance, err error) {
	err = c.h.route(ctx, abi.MethodGet, func(p runtime.Calls) (err error) {
		out, err = p.Get(ctx, machine, data)
		return err
	})
	return out, err
}

func (c handleCalls) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *runtime.CallData) (config, name string, err error) {
	err = c.h.route(ctx, abi.MethodGetCloudConfig, func(p runtime.Calls) (err error) {
		config, name, err = p.GetCloudConfig(ctx, spec, data)
		return err
	})
	return config, name, err
}

func (c handleCalls) Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *runtime.CallData, userdata string) (out instance.Instance, err error) {
	err = c.h.route(ctx, abi.MethodCreate, func(p runtime.Calls) (err error) {
		out, err = p.Create(ctx, machine, data, userdata)
		return err
	})
	return out, err
}

func (c handleCalls) Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *runtime.CallData) (done bool, err error) {
	err = c.h.route(ctx, abi.MethodDelete, func(p runtime.Calls) (err error) {
		done, err = p.Cleanup(ctx, machine, data)
		return err
	})
	return done, err
}

func (c handleCalls) MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine, data *runtime.CallData) (out map[string]string, err error) {
	err = c.h.route(ctx, abi.MethodMachineMetricsLabels, func(p runtime.Calls) (err error) {
		out, err = p.MachineMetricsLabels(ctx, machine, data)
		return err
	})
	return out, err
}

func (c handleCalls) MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID, data *runtime.CallData) error {
	return c.h.route(ctx, abi.MethodMigrateUID, func(p runtime.Calls) error { return p.MigrateUID(ctx, machine, newUID, data) })
}

func (c handleCalls) SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *runtime.CallData) error {
	return c.h.route(ctx, abi.MethodSetMetricsForMachines, func(p runtime.Calls) error {
		return p.SetMetricsForMachines(ctx, machines, data)
	})
}
