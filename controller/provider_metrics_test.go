package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// metricsCloud is a memCloud with SetMetricsForMachines that exposes, like
// runtime/metrics' GuestCollector for a module, what it was last told on
// the registry the controller's metrics are on.
type metricsCloud struct {
	*memCloud
	gauge *prometheus.GaugeVec

	mu    sync.Mutex
	lists [][]string // Machine names of each call
	fail  int        // the next calls that fail
}

func (p *metricsCloud) SetMetricsForMachines(_ context.Context, l clusterv1alpha1.MachineList, _ *provider.Data) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for _, m := range l.Items {
		names = append(names, m.Name)
	}
	p.lists = append(p.lists, names)
	if p.fail > 0 {
		p.fail--
		return errors.New("cloud API down")
	}
	p.gauge.Reset()
	p.gauge.WithLabelValues("all").Set(float64(len(names)))
	return nil
}

// roundCloud is a memCloud that counts its SetMetricsForMachines calls
// and does nothing else with them: one call a round while it has
// Machines, after the providers whose names sort before its own.
type roundCloud struct {
	*memCloud
	calls atomic.Int64
}

func (p *roundCloud) SetMetricsForMachines(context.Context, clusterv1alpha1.MachineList, *provider.Data) error {
	p.calls.Add(1)
	return nil
}

func (p *metricsCloud) last() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lists) == 0 {
		return nil, 0
	}
	return p.lists[len(p.lists)-1], len(p.lists)
}

func TestSetMetricsForMachinesReachesControllerMetrics(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MetricsInterval = 30 * time.Millisecond })
	mc := &metricsCloud{memCloud: h.cloud, fail: 1, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "wasmprov_guest_mem_machines", Help: "Machines of the mem provider."}, []string{"scope"})}
	h.reg.MustRegister(mc.gauge)
	other := &roundCloud{memCloud: newMemCloud()} // counts the rounds
	h.ctrl.opts.Providers = NewMapSource(map[string]provider.Interface{"mem": mc, "other": other})
	h.start()
	provision(t, h, "b")
	provision(t, h, "a")
	h.machines.Create(machine("x", "other", `{"size":"s"}`))
	h.machines.Create(machine("y", "unloaded", `{"size":"s"}`))

	// Reported, and by a call that succeeded: the first call with both
	// may be the one that fails.
	eventually(t, "both mem Machines reported", func() bool {
		names, _ := mc.last()
		return slices.Equal(names, []string{"a", "b"}) && testutil.ToFloat64(mc.gauge.WithLabelValues("all")) == 2
	})
	want := `
# HELP wasmprov_guest_mem_machines Machines of the mem provider.
# TYPE wasmprov_guest_mem_machines gauge
wasmprov_guest_mem_machines{scope="all"} 2
# HELP wasmprov_controller_set_metrics_errors_total Failed SetMetricsForMachines calls, by provider
# TYPE wasmprov_controller_set_metrics_errors_total counter
wasmprov_controller_set_metrics_errors_total{provider="mem"} 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want),
		"wasmprov_guest_mem_machines", "wasmprov_controller_set_metrics_errors_total"); err != nil {
		t.Fatal(err)
	}

	// Once its Machines are gone, the provider is told so once: its
	// samples do not describe Machines that no longer exist.
	h.machines.Delete("default", "a")
	h.machines.Delete("default", "b")
	eventually(t, "an empty list", func() bool {
		names, _ := mc.last()
		return len(names) == 0 && testutil.ToFloat64(mc.gauge.WithLabelValues("all")) == 0
	})
	_, n := mc.last()
	// Five intervals: "other" ("x") is called in every round, after
	// "mem"; the round of the empty list may not have reached it yet.
	rounds := other.calls.Load()
	eventually(t, "five more rounds", func() bool { return other.calls.Load() >= rounds+6 })
	if _, after := mc.last(); after != n {
		t.Errorf("%d more calls with no Machines, want none after the first empty one", after-n)
	}
}

func TestMetricsIntervalNegativeDisables(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MetricsInterval = -1 })
	mc := &metricsCloud{memCloud: h.cloud, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"scope"})}
	h.ctrl.opts.Providers = NewMapSource(map[string]provider.Interface{"mem": mc})
	h.start()
	provision(t, h, "a")
	// Run returns after the metrics loop did: with MetricsInterval >= 0
	// that loop calls the providers once before it looks at the context.
	h.stop()
	if _, n := mc.last(); n != 0 {
		t.Fatalf("%d SetMetricsForMachines calls with MetricsInterval < 0", n)
	}
}

// MoreMachines (the Cluster API controller's WasmMachines) reach the
// provider in the same list as the controller's own Machines.
func TestSetMetricsForMachinesWithMoreMachines(t *testing.T) {
	more := *machine("wm-1", "mem", `{"size":"s"}`)
	more.Namespace = "capi"
	h := newHarness(t, func(o *Options) {
		o.MetricsInterval = 30 * time.Millisecond
		o.MoreMachines = func(context.Context) []clusterv1alpha1.Machine { return []clusterv1alpha1.Machine{more} }
	})
	mc := &metricsCloud{memCloud: h.cloud, gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "wasmprov_guest_mem_machines", Help: "Machines of the mem provider."}, []string{"scope"})}
	h.ctrl.opts.Providers = NewMapSource(map[string]provider.Interface{"mem": mc})
	h.start()
	provision(t, h, "a")
	eventually(t, "the Machine and the WasmMachine in one list", func() bool {
		names, _ := mc.last()
		return slices.Equal(names, []string{"wm-1", "a"}) // by namespace/name: capi/wm-1, default/a
	})
}
