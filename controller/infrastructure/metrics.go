package infrastructure

import (
	"context"
	"sort"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	"github.com/wasmprov/wasmprov/controller/internal/machinemetrics"
	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metrics of the WasmMachine reconciler. Reconcile counts, durations and
// errors are controller-runtime's own (controller="wasmmachine").
type metrics struct {
	r          *MachineReconciler
	reconciles *prometheus.CounterVec
	terminal   prometheus.Counter
	creates    prometheus.Counter
	deletes    prometheus.Counter

	labels machinemetrics.Labels // by WasmMachine key, from MachineMetricsLabels
}

func newMetrics(r *MachineReconciler) *metrics {
	m := &metrics{r: r,
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmprov_wasmmachine_reconciles_total",
			Help: "WasmMachine reconciles by result: success, requeue (instance being created or deleted), error (retried with backoff)"},
			[]string{"result"}),
		terminal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_wasmmachine_terminal_errors_total", Help: "Terminal provider errors recorded on WasmMachines (TerminalFailure set)"}),
		creates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_wasmmachine_instance_creates_total", Help: "Successful provider Create calls for WasmMachines"}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_wasmmachine_instance_deletes_total", Help: "WasmMachine instances deleted (Cleanup done, finalizer removed)"}),
	}
	for _, r := range []string{"success", "requeue", "error"} {
		m.reconciles.WithLabelValues(r)
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.reconciles, m.terminal, m.creates, m.deletes, (*wasmMachineCollector)(m)} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observeLabels records the provider's MachineMetricsLabels for the
// WasmMachine, asked once per generation during reconcile so that a
// scrape never calls into a provider.
func (m *metrics) observeLabels(ctx context.Context, s *scope, prov provider.Interface, provName string) {
	err := m.labels.Observe(s.req.String(), s.wm.Generation, func() (map[string]string, error) {
		return prov.MachineMetricsLabels(ctx, machineView(s.wm, ""), nil)
	})
	if err != nil {
		s.log.Info("MachineMetricsLabels failed", "provider", provName, "err", err)
	}
}

func (m *metrics) forget(key string) { m.labels.Forget(key) }

// wasmMachineCollector exports wasmprov_wasmmachines_total: WasmMachines
// by provider, OS and the provider's MachineMetricsLabels, as
// machine_controller_machines_total counts Machines.
type wasmMachineCollector metrics

// Describe implements prometheus.Collector; the family's label names
// depend on the providers, so it describes nothing ("unchecked").
func (mc *wasmMachineCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector, from the manager's cache.
func (mc *wasmMachineCollector) Collect(ch chan<- prometheus.Metric) {
	m := (*metrics)(mc)
	var list infrav1.WasmMachineList
	if err := m.r.opts.Client.List(context.Background(), &list); err != nil {
		return // the cache is not started (a standby replica, or before the start)
	}
	rows := make([]machinemetrics.Row, 0, len(list.Items))
	for i := range list.Items {
		wm := &list.Items[i]
		row := machinemetrics.Row{Fixed: map[string]string{}, Provider: m.labels.Get(client.ObjectKeyFromObject(wm).String())}
		if cfg, err := providerconfig.GetConfig(&wm.Spec.ProviderSpec); err == nil {
			row.Fixed["provider"] = string(cfg.CloudProvider)
			row.Fixed["os"] = string(cfg.OperatingSystem)
		}
		rows = append(rows, row)
	}
	machinemetrics.Collect(ch, "wasmprov_wasmmachines_total",
		"Number of WasmMachines by provider, OS and the provider's MachineMetricsLabels",
		[]string{"os", "provider"}, rows)
}

// Machines returns every WasmMachine of the manager's cache as the
// machine-controller Machine its provider sees, sorted by namespace and
// name: what the Machine controller hands providers in
// SetMetricsForMachines besides its own Machines
// (controller.Options.MoreMachines), so that a provider serving both
// ecosystems hears of all its machines in one list.
func (r *MachineReconciler) Machines(ctx context.Context) []clusterv1alpha1.Machine {
	var list infrav1.WasmMachineList
	if err := r.opts.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]clusterv1alpha1.Machine, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, *machineView(&list.Items[i], ""))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
