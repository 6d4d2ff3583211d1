package controller

import (
	"context"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	"github.com/wasmprov/wasmprov/controller/internal/machinemetrics"
	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names follow machine-controller's (prefix machine_controller_)
// where upstream has the metric; wasmprov's own carry wasmprov_controller_.
const metricsPrefix = "machine_controller_"

type metrics struct {
	c *Controller

	workers           prometheus.Gauge
	errors            prometheus.Counter
	reconciles        *prometheus.CounterVec
	reconcileDuration prometheus.Histogram
	creates           prometheus.Counter
	deletes           prometheus.Counter
	conflicts         prometheus.Counter
	// createSlotWaits counts reconciles that found no free Create slot.
	createSlotWaits prometheus.Counter
	// providerMetricsErrors counts failed SetMetricsForMachines calls.
	providerMetricsErrors *prometheus.CounterVec

	createdDesc *prometheus.Desc
	deletedDesc *prometheus.Desc

	labels machinemetrics.Labels // by Machine key, from MachineMetricsLabels
}

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		c: c,
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "workers", Help: "The number of running machine controller workers"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "errors_total", Help: "The total number of unexpected errors the controller encountered"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmprov_controller_reconciles_total",
			Help: "Reconciles by result: success, requeue (instance not ready yet), terminal (error recorded in status), error (retried)"},
			[]string{"result"}),
		reconcileDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wasmprov_controller_reconcile_duration_seconds", Help: "Duration of one Machine reconcile",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}),
		creates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_controller_instance_creates_total", Help: "Successful provider Create calls"}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_controller_instance_deletes_total", Help: "Successful provider Delete calls; for a provider with Cleanup, deletions finished"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_controller_update_conflicts_total", Help: "Machine updates that still conflicted after retries"}),
		createSlotWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_controller_create_slot_waits_total",
			Help: "Reconciles that found every Create slot of the provider or the MachineSet taken (-max-concurrent-creates-*) and requeued"}),
		providerMetricsErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmprov_controller_set_metrics_errors_total", Help: "Failed SetMetricsForMachines calls, by provider"},
			[]string{"provider"}),
		createdDesc: prometheus.NewDesc(metricsPrefix+"machine_created",
			"Timestamp of the machine's creation time", []string{"machine"}, nil),
		deletedDesc: prometheus.NewDesc(metricsPrefix+"machine_deleted",
			"Timestamp of the machine's deletion time", []string{"machine"}, nil),
	}
	m.workers.Set(0)
	m.errors.Add(0)
	for _, r := range []string{"success", "requeue", "terminal", "error"} {
		m.reconciles.WithLabelValues(r)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.workers, m.errors, m.reconciles, m.reconcileDuration,
		m.creates, m.deletes, m.conflicts, m.createSlotWaits, m.providerMetricsErrors, (*machineCollector)(m)} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// observeLabels records the provider's MachineMetricsLabels for m. They
// are asked once per Machine generation, during reconcile, so a scrape
// never calls into a provider.
func (m *metrics) observeLabels(ctx context.Context, log logger, machine *clusterv1alpha1.Machine, prov provider.Interface, provName string) {
	err := m.labels.Observe(keyOf(machine), machine.Generation, func() (map[string]string, error) {
		return prov.MachineMetricsLabels(ctx, machine, nil)
	})
	if err != nil {
		log.Info("MachineMetricsLabels failed", "err", err)
	}
}

func (m *metrics) forget(key string) { m.labels.Forget(key) }

// machineCollector exports machine_controller_machines_total like
// machine-controller's MachineCollector: one series per distinct label set
// of kubelet_version, provider, os and the provider's labels. Label names
// are the union over all Machines (missing ones empty), so the family stays
// consistent for Prometheus.
type machineCollector metrics

// Describe implements prometheus.Collector. It describes nothing: the label
// names of machines_total depend on the providers, so the collector is
// "unchecked".
func (mc *machineCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (mc *machineCollector) Collect(ch chan<- prometheus.Metric) {
	m := (*metrics)(mc)
	objs := m.c.informer.GetStore().List()
	rows := make([]machinemetrics.Row, 0, len(objs))
	for _, o := range objs {
		machine := o.(*clusterv1alpha1.Machine)
		ch <- prometheus.MustNewConstMetric(m.createdDesc, prometheus.GaugeValue,
			float64(machine.CreationTimestamp.Unix()), machine.Name)
		if machine.DeletionTimestamp != nil {
			ch <- prometheus.MustNewConstMetric(m.deletedDesc, prometheus.GaugeValue,
				float64(machine.DeletionTimestamp.Unix()), machine.Name)
		}
		row := machinemetrics.Row{Fixed: map[string]string{"kubelet_version": machine.Spec.Versions.Kubelet},
			Provider: m.labels.Get(keyOf(machine))}
		if cfg, err := providerconfig.GetConfig(machine.Spec.ProviderSpec.Value); err == nil {
			row.Fixed["provider"] = string(cfg.CloudProvider)
			row.Fixed["os"] = string(cfg.OperatingSystem)
		}
		rows = append(rows, row)
	}
	machinemetrics.Collect(ch, metricsPrefix+"machines_total",
		"Number of machines by kubelet version, provider, OS and the provider's MachineMetricsLabels",
		[]string{"kubelet_version", "os", "provider"}, rows)
}
