package metrics_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// reporter is a native provider whose SetMetricsForMachines answers
// samples(machines); every other method succeeds with no output.
func reporter(t *testing.T, rt *runtime.Runtime, name string, samples func(clusterv1alpha1.MachineList) []abi.MetricSample) *runtime.Provider {
	t.Helper()
	p, err := rt.LoadFunc(name, 0, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m != abi.MethodSetMetricsForMachines {
			return abi.StatusOK
		}
		in, err := h.Input(abi.InputMachineList)
		if err != nil {
			h.SetError("", err.Error(), 0)
			return abi.StatusError
		}
		var list clusterv1alpha1.MachineList
		if err := json.Unmarshal(in, &list); err != nil {
			h.SetError("", err.Error(), 0)
			return abi.StatusError
		}
		out, _ := json.Marshal(abi.MetricSamples{Metrics: samples(list)})
		if err := h.Output(out); err != nil {
			return abi.StatusError
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func machines(names ...string) clusterv1alpha1.MachineList {
	var l clusterv1alpha1.MachineList
	for _, n := range names {
		l.Items = append(l.Items, clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default"}})
	}
	return l
}

func newRuntime(t *testing.T, opts ...runtime.Option) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(append([]runtime.Option{testhost.EngineOption(), runtime.WithLogger(slog.New(slog.DiscardHandler)),
		runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func TestGuestCollectorNative(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	perMachine := func(l clusterv1alpha1.MachineList) []abi.MetricSample {
		out := []abi.MetricSample{{Name: "api_requests_total", Help: "Cloud API requests.", Type: abi.MetricCounter, Value: 42}}
		for _, m := range l.Items {
			out = append(out, abi.MetricSample{Name: "server_up", Type: abi.MetricGauge,
				Labels: map[string]string{"machine": m.Name, "zone": "fsn1"}, Value: 1})
		}
		return out
	}
	hz := reporter(t, rt, "hetzner", perMachine)
	aws := reporter(t, rt, "aws", func(l clusterv1alpha1.MachineList) []abi.MetricSample {
		return []abi.MetricSample{{Name: "server_up", Type: abi.MetricGauge, Help: "AWS instances up.", Value: float64(len(l.Items))}}
	})
	refused := reporter(t, rt, "refused", func(clusterv1alpha1.MachineList) []abi.MetricSample {
		return []abi.MetricSample{
			{Name: "fine", Type: abi.MetricGauge, Value: 1},
			{Name: "negative_total", Type: abi.MetricCounter, Value: -3}, // a counter cannot be negative
		}
	})
	silent := reporter(t, rt, "silent", perMachine) // never asked: nothing but its skipped gauge

	if err := hz.SetMetricsForMachines(ctx, machines("m1", "m2"), nil); err != nil {
		t.Fatal(err)
	}
	if err := aws.SetMetricsForMachines(ctx, machines("a1", "a2", "a3"), nil); err != nil {
		t.Fatal(err)
	}
	if err := refused.SetMetricsForMachines(ctx, machines("x"), nil); runtime.ErrorClass(err) != runtime.ClassBadResult {
		t.Fatalf("negative counter: %v, want a bad-result error", err)
	}

	g := metrics.NewGuestCollector(func() []metrics.SampleSource {
		return []metrics.SampleSource{silent, refused, hz, aws}
	}, nil)
	pr := prometheus.NewPedanticRegistry()
	pr.MustRegister(g)
	want := `
# HELP wasmprov_guest_aws_server_up AWS instances up.
# TYPE wasmprov_guest_aws_server_up gauge
wasmprov_guest_aws_server_up 3
# HELP wasmprov_guest_hetzner_api_requests_total Cloud API requests.
# TYPE wasmprov_guest_hetzner_api_requests_total counter
wasmprov_guest_hetzner_api_requests_total 42
# HELP wasmprov_guest_hetzner_server_up Reported by provider hetzner through SetMetricsForMachines.
# TYPE wasmprov_guest_hetzner_server_up gauge
wasmprov_guest_hetzner_server_up{machine="m1",zone="fsn1"} 1
wasmprov_guest_hetzner_server_up{machine="m2",zone="fsn1"} 1
# HELP wasmprov_provider_guest_metric_families_skipped Guest metric families of the provider left out of this scrape: another provider's family has the same name.
# TYPE wasmprov_provider_guest_metric_families_skipped gauge
wasmprov_provider_guest_metric_families_skipped{provider="aws"} 0
wasmprov_provider_guest_metric_families_skipped{provider="hetzner"} 0
wasmprov_provider_guest_metric_families_skipped{provider="refused"} 0
wasmprov_provider_guest_metric_families_skipped{provider="silent"} 0
`
	if err := testutil.GatherAndCompare(pr, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}

	// A refused result replaces the samples before it: stale numbers would
	// look current.
	if err := hz.SetMetricsForMachines(ctx, machines("m1"), nil); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(g, "wasmprov_guest_hetzner_server_up"); n != 1 {
		t.Fatalf("%d hetzner server_up series after a call with one Machine, want 1", n)
	}
}

func TestGuestCollectorNameCollisions(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	gauge := func(name string, v float64) func(clusterv1alpha1.MachineList) []abi.MetricSample {
		return func(clusterv1alpha1.MachineList) []abi.MetricSample {
			return []abi.MetricSample{{Name: name, Type: abi.MetricGauge, Value: v}}
		}
	}
	// "a-b" and "a_b" share the prefix wasmprov_guest_a_b_; "a" with b_x
	// and "a_b" with x both make wasmprov_guest_a_b_x. Different help or
	// type per provider would make a naive scrape fail for everyone.
	dash := reporter(t, rt, "a-b", gauge("x", 1))
	under := reporter(t, rt, "a_b", func(clusterv1alpha1.MachineList) []abi.MetricSample {
		return []abi.MetricSample{
			{Name: "x", Type: abi.MetricCounter, Help: "other help", Value: 2},
			{Name: "y", Type: abi.MetricGauge, Value: 5},
		}
	})
	short := reporter(t, rt, "a", gauge("b_x", 3))
	for _, p := range []*runtime.Provider{dash, under, short} {
		if err := p.SetMetricsForMachines(ctx, machines("m"), nil); err != nil {
			t.Fatal(err)
		}
	}
	logs := &testlog.Buffer{}
	g := metrics.NewGuestCollector(func() []metrics.SampleSource {
		return []metrics.SampleSource{under, dash, short}
	}, slog.New(slog.NewTextHandler(logs, nil)))
	pr := prometheus.NewPedanticRegistry()
	pr.MustRegister(g)
	// "a" sorts first and keeps wasmprov_guest_a_b_x; a-b's x and a_b's x
	// are skipped, a_b's y is not.
	want := `
# HELP wasmprov_guest_a_b_x Reported by provider a through SetMetricsForMachines.
# TYPE wasmprov_guest_a_b_x gauge
wasmprov_guest_a_b_x 3
# HELP wasmprov_guest_a_b_y Reported by provider a_b through SetMetricsForMachines.
# TYPE wasmprov_guest_a_b_y gauge
wasmprov_guest_a_b_y 5
# HELP wasmprov_provider_guest_metric_families_skipped Guest metric families of the provider left out of this scrape: another provider's family has the same name.
# TYPE wasmprov_provider_guest_metric_families_skipped gauge
wasmprov_provider_guest_metric_families_skipped{provider="a"} 0
wasmprov_provider_guest_metric_families_skipped{provider="a-b"} 1
wasmprov_provider_guest_metric_families_skipped{provider="a_b"} 1
`
	for range 2 { // a second scrape: the same answer, no second log line
		if err := testutil.GatherAndCompare(pr, strings.NewReader(want)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "guest metric family skipped"); n != 2 {
		t.Fatalf("%d collision log lines, want 2 (one per skipped family):\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "provider=a-b metric=wasmprov_guest_a_b_x kept_for=a") {
		t.Errorf("collision log lacks who kept the name:\n%s", logs.String())
	}
}

// TestGuestCollectorRegistry runs a real module exporting
// SetMetricsForMachines through a registry and the Collector's
// GuestCollector.
func TestGuestCollectorRegistry(t *testing.T) {
	ctx := context.Background()
	build := func(mode string) []byte {
		b, err := os.ReadFile(testguest.BuildWith(t, "runtime/metrics/testdata/metricsguest", "-X main.Mode="+mode))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c := metrics.New()
	rt := newRuntime(t, runtime.WithCallObserver(c.ObserveCall))
	reg := registry.New(rt, registry.WithLogger(slog.New(slog.DiscardHandler)), registry.WithSmokeTest(nil))
	defer reg.Close(ctx)
	c.SetRegistry(reg)
	pr := prometheus.NewPedanticRegistry()
	pr.MustRegister(c, c.GuestCollector(nil))
	if err := reg.Register(ctx, "good", build(""), nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(ctx, "bad", build("refused"), nil); err != nil {
		t.Fatal(err)
	}
	good, _ := reg.Get("good")
	bad, _ := reg.Get("bad")
	if err := good.SetMetricsForMachines(ctx, machines("m1", "m2"), nil); err != nil {
		t.Fatal(err)
	}
	if err := bad.SetMetricsForMachines(ctx, machines("m1"), nil); runtime.ErrorClass(err) != runtime.ClassBadResult {
		t.Fatalf("refused result: %v, want bad-result", err)
	}
	want := `
# HELP wasmprov_guest_good_machine_up Reported by provider good through SetMetricsForMachines.
# TYPE wasmprov_guest_good_machine_up gauge
wasmprov_guest_good_machine_up{machine="m1"} 1
wasmprov_guest_good_machine_up{machine="m2"} 1
# HELP wasmprov_guest_good_machines Machines the host handed over.
# TYPE wasmprov_guest_good_machines gauge
wasmprov_guest_good_machines 2
`
	if err := testutil.GatherAndCompare(pr, strings.NewReader(want),
		"wasmprov_guest_good_machine_up", "wasmprov_guest_good_machines", "wasmprov_guest_bad_machines", "wasmprov_guest_bad_broken_total"); err != nil {
		t.Fatal(err)
	}
	// The calls are counted like any other.
	got := gather(t, pr)
	for _, p := range []string{"good", "bad"} {
		key := `wasmprov_provider_calls_total{method=SetMetricsForMachines,provider=` + p + `}`
		if got[key] != 1 {
			t.Errorf("%s = %v, want 1", key, got[key])
		}
	}
}
