package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/internal/guesttext"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/pool"

	"k8s.io/apimachinery/pkg/types"
)

// Provider is a provider module loaded by a Runtime. It implements
// provider.Interface: each method runs the module's export in an instance
// of its own, bounded by the context's deadline (or the policy's call
// timeout); cancelling the context stops the guest. cloud.SeedProvider
// and cloudprovider.New adapt it to machine-controller's contracts. A
// Provider is safe for concurrent use.
type Provider struct {
	name   string
	rt     *Runtime
	mod    engine.Module // nil for a native provider
	modCfg engine.InstanceConfig
	env    *hostmodule.Env
	policy Policy
	digest string
	size   int
	logger *slog.Logger

	declared, granted abi.Capability
	// hasMetrics: the module exports SetMetricsForMachines (a native
	// provider always answers it).
	hasMetrics bool
	samples    atomic.Pointer[[]MetricSample]
	pool       *pool.Pool[*guestInstance] // nil for a native provider
	native     NativeFunc                 // set by LoadFunc
	closeOnce  sync.Once
	closeErr   error
}

var _ provider.Interface = (*Provider)(nil)

// guestInstance is one instantiated module, used by one caller at a time.
type guestInstance struct {
	inst     engine.Instance
	fns      [abi.MethodSetMetricsForMachines + 1]engine.Function
	stack    [1]uint64
	calls    int
	declared abi.Capability
	// deadline of the call in flight on the monotonic clock (ns since
	// epoch), 0 when none; timer fires at it (see startTimeout).
	deadline atomic.Int64
	timer    *time.Timer
}

func (i *guestInstance) Close(ctx context.Context) error {
	if i.timer != nil {
		i.timer.Stop()
	}
	return i.inst.Close(ctx)
}

// Name is the provider's name.
func (p *Provider) Name() string { return p.name }

// SHA256 is the hex digest of the module the provider runs.
func (p *Provider) SHA256() string { return p.digest }

// Declared returns the capabilities the module declares; Granted those the
// policy grants.
func (p *Provider) Declared() abi.Capability { return p.declared }

// Granted returns the capabilities the policy grants the module.
func (p *Provider) Granted() abi.Capability { return p.granted }

// Policy returns the provider's policy, with defaults filled in.
func (p *Provider) Policy() Policy { return p.policy }

// Warm instantiates idle instances until the pool holds n (at most the
// policy's PoolSize), so the first calls after a reload pay no
// instantiation. A native provider has no pool; Warm does nothing.
func (p *Provider) Warm(ctx context.Context, n int) error {
	if p.pool == nil {
		return nil
	}
	return p.pool.Warm(ctx, n)
}

// PoolStats is a snapshot of a provider's instance pool.
type PoolStats struct {
	// Created counts instances ever instantiated.
	Created int64
	// Live is how many instances exist now, idle or in use.
	Live int64
	// InUse is how many instances are serving a call now.
	InUse int64
	// Discarded counts instances thrown away after a trap, timeout, panic or
	// a broken invariant (never reused).
	Discarded int64
	// Reaped counts instances closed after idling for the policy's
	// IdleTimeout.
	Reaped int64
}

// PoolStats reports the provider's instance pool. A native provider
// (runtime/native) has no pool and reports zeros.
func (p *Provider) PoolStats() PoolStats {
	if p.pool == nil {
		return PoolStats{}
	}
	s := p.pool.Stats()
	return PoolStats{Created: s.Created.Load(), Live: s.Live.Load(), InUse: s.InUse.Load(), Discarded: s.Discarded.Load(),
		Reaped: s.Reaped.Load()}
}

// Close stops accepting calls, waits for calls in flight to finish (or ctx
// to end), and releases the instances, the compiled module and its memory,
// and the HTTP connections the version's http_do kept alive.
func (p *Provider) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		if p.pool != nil {
			p.closeErr = p.pool.Close(ctx)
		}
		switch {
		case p.mod == nil:
		case p.closeErr != nil:
			// Calls still run in instances of this module (ctx ended
			// first): closing it now would pull their memory from under
			// them. It is closed when the last of them is back.
			go func() {
				<-p.pool.Drained()
				_ = p.mod.Close(context.Background())
				p.env.Close()
			}()
		default:
			p.closeErr = p.mod.Close(context.WithoutCancel(ctx))
		}
		if p.closeErr == nil {
			// The version's HTTP drops the connections its http_do kept
			// alive: a closed (or replaced) version must not hold
			// connections to the cloud's API open until the server times
			// them out.
			p.env.Close()
		}
		p.rt.untrack(p)
	})
	return p.closeErr
}

// newCall is the host side of one call of method m.
func (p *Provider) newCall(ctx context.Context, m abi.Method, data *provider.Data) *hostmodule.Call {
	call := hostmodule.NewCall(ctx, p.env, m, p.granted)
	call.Data = data
	return call
}

func (p *Provider) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) (_ clusterv1alpha1.MachineSpec, err error) {
	defer p.observe(abi.MethodAddDefaults)(&err)
	call := p.newCall(ctx, abi.MethodAddDefaults, data)
	call.Spec = &spec
	if err := p.invoke(ctx, call); err != nil {
		return spec, err
	}
	if len(call.Output) == 0 {
		return spec, p.refusedOutput(call)
	}
	// The output is the whole defaulted spec and replaces spec: a field
	// it leaves out is cleared (abi/SPEC.md §4.1).
	var out clusterv1alpha1.MachineSpec
	if err := p.decodeOutput(call, &out, docMachineSpec); err != nil {
		return spec, err
	}
	// The defaulted spec is stored and handed back in later calls, where
	// config_var trusts its references as the caller's: a guest must not
	// pick which Secrets it reads by defaulting one in.
	if added := hostmodule.AddedConfigRefs(rawProviderSpec(&spec), rawProviderSpec(&out)); len(added) > 0 {
		call.Logger().Warn("AddDefaults result refused: it adds a Secret or ConfigMap reference", "reference", added[0].String())
		return spec, p.badResult(abi.MethodAddDefaults, "the defaulted spec adds %s: a provider may not choose which Secrets or ConfigMaps it reads", added[0])
	}
	return out, nil
}

func (p *Provider) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) (err error) {
	defer p.observe(abi.MethodValidate)(&err)
	call := p.newCall(ctx, abi.MethodValidate, data)
	call.Spec = &spec
	return p.invoke(ctx, call)
}

func (p *Provider) Get(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (_ instance.Instance, err error) {
	defer p.observe(abi.MethodGet)(&err)
	call := p.newCall(ctx, abi.MethodGet, data)
	call.Machine = machine
	if err := p.invoke(ctx, call); err != nil {
		return nil, err
	}
	return p.decodeInstance(call)
}

func (p *Provider) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *provider.Data) (_, _ string, err error) {
	defer p.observe(abi.MethodGetCloudConfig)(&err)
	call := p.newCall(ctx, abi.MethodGetCloudConfig, data)
	call.Spec = &spec
	if err := p.invoke(ctx, call); err != nil {
		return "", "", err
	}
	if len(call.Output) == 0 {
		return "", "", p.refusedOutput(call)
	}
	var cc abi.CloudConfig
	if err := p.decodeOutput(call, &cc, docCloudConfig); err != nil {
		return "", "", err
	}
	return cc.Config, cc.Name, nil
}

func (p *Provider) Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data, userdata string) (_ instance.Instance, err error) {
	defer p.observe(abi.MethodCreate)(&err)
	call := p.newCall(ctx, abi.MethodCreate, data)
	call.Machine, call.Userdata = machine, userdata
	if err := p.invoke(ctx, call); err != nil {
		return nil, err
	}
	return p.decodeInstance(call)
}

// Delete runs the module's Delete and returns its answer as the module
// gave it: an IN_PROGRESS answer is a *CallError wrapping
// ErrDeletionInProgress, NOT_FOUND one wrapping ErrInstanceNotFound (the
// SPEC asks for OK). It is for checkers of a module (conformance);
// callers of the contract use Cleanup.
func (p *Provider) Delete(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (err error) {
	defer p.observe(abi.MethodDelete)(&err)
	call := p.newCall(ctx, abi.MethodDelete, data)
	call.Machine = machine
	return p.invoke(ctx, call)
}

// Cleanup runs the module's Delete. done is true when everything is gone:
// the module answered OK, or NOT_FOUND (the instance is already gone; the
// one place wasmprov decides that this is done, for every contract).
// done is false when the module answered IN_PROGRESS: deletion started,
// call again; data.Progress hears its note and hint.
func (p *Provider) Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (bool, error) {
	err := p.Delete(ctx, machine, data)
	switch {
	case err == nil, cloudprovidererrors.IsNotFound(err):
		return true, nil
	case errors.Is(err, ErrDeletionInProgress):
		if data != nil && data.Progress != nil {
			data.Progress(progressOf(err))
		}
		return false, nil
	}
	return false, err
}

func (p *Provider) MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine, data *provider.Data) (_ map[string]string, err error) {
	defer p.observe(abi.MethodMachineMetricsLabels)(&err)
	call := p.newCall(ctx, abi.MethodMachineMetricsLabels, data)
	call.Machine = machine
	if err := p.invoke(ctx, call); err != nil {
		return nil, err
	}
	labels := map[string]string{}
	if err := p.refusedOutput(call); err != nil {
		return nil, err
	}
	if len(call.Output) > 0 {
		if err := p.decodeOutput(call, &labels, docLabels); err != nil {
			return nil, err
		}
	}
	if err := checkMetricsLabels(labels); err != nil {
		return nil, p.badResult(abi.MethodMachineMetricsLabels, "%v", err)
	}
	for k, v := range labels {
		labels[k] = guesttext.PrintableLine(v)
	}
	return labels, nil
}

func (p *Provider) MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID, data *provider.Data) (err error) {
	defer p.observe(abi.MethodMigrateUID)(&err)
	call := p.newCall(ctx, abi.MethodMigrateUID, data)
	call.Machine, call.NewUID = machine, newUID
	return p.invoke(ctx, call)
}

func rawProviderSpec(s *clusterv1alpha1.MachineSpec) []byte {
	if s.ProviderSpec.Value == nil {
		return nil
	}
	return s.ProviderSpec.Value.Raw
}
