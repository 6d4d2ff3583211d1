package controller

import (
	"context"
	"sort"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
)

// What a provider reports is exposed by whoever exposes the provider (for
// wasmprov's runtime: runtime/metrics' GuestCollector, on the same
// /metrics as the controller's own metrics); the controller itself
// exposes nothing of it.

// runProviderMetrics calls setProviderMetrics every MetricsInterval until
// stop is done, the first time right away. Its calls run on callCtx, like
// reconciles.
func (c *Controller) runProviderMetrics(stop, callCtx context.Context) {
	if c.opts.MetricsInterval < 0 {
		return
	}
	t := c.opts.Clock.NewTicker(c.opts.MetricsInterval)
	defer t.Stop()
	var last map[string]bool
	for {
		last = c.setProviderMetrics(callCtx, last)
		select {
		case <-stop.Done():
			return
		case <-t.C():
		}
	}
}

// setProviderMetrics hands each provider, with SetMetricsForMachines, its
// Machines from the informer's cache. A provider that had Machines in the
// previous round (prev) and has none now gets an empty list, so its
// samples do not go on describing Machines that are gone. It returns the
// providers it gave Machines.
func (c *Controller) setProviderMetrics(ctx context.Context, prev map[string]bool) map[string]bool {
	byProvider := map[string]*clusterv1alpha1.MachineList{}
	for name, had := range prev {
		if had {
			byProvider[name] = &clusterv1alpha1.MachineList{}
		}
	}
	machines := make([]*clusterv1alpha1.Machine, 0)
	for _, o := range c.informer.GetStore().List() {
		machines = append(machines, o.(*clusterv1alpha1.Machine))
	}
	if c.opts.MoreMachines != nil {
		more := c.opts.MoreMachines(ctx)
		for i := range more {
			machines = append(machines, &more[i])
		}
	}
	for _, m := range machines {
		cfg, err := providerconfig.GetConfig(m.Spec.ProviderSpec.Value)
		if err != nil {
			continue // reconcile reports it in the Machine's status
		}
		name := string(cfg.CloudProvider)
		if byProvider[name] == nil {
			byProvider[name] = &clusterv1alpha1.MachineList{}
		}
		byProvider[name].Items = append(byProvider[name].Items, *m.DeepCopy())
	}
	names := make([]string, 0, len(byProvider))
	for n := range byProvider {
		names = append(names, n)
	}
	sort.Strings(names)
	called := map[string]bool{}
	for _, name := range names {
		prov, err := c.opts.Providers.Provider(name)
		if err != nil {
			continue // not loaded (yet): reconcile retries and logs those Machines
		}
		list := byProvider[name]
		sort.Slice(list.Items, func(i, j int) bool { return keyOf(&list.Items[i]) < keyOf(&list.Items[j]) })
		called[name] = len(list.Items) > 0
		if err := prov.SetMetricsForMachines(ctx, *list, nil); err != nil {
			c.metrics.providerMetricsErrors.WithLabelValues(name).Inc()
			c.log.Warn("SetMetricsForMachines failed", "provider", name, "machines", len(list.Items), "err", err)
		}
	}
	return called
}
