package metrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

func guest(t *testing.T, version, mode string) []byte {
	t.Helper()
	flags := "-X main.Version=" + version
	if mode != "" {
		flags += " -X main.Mode=" + mode
	}
	b, err := os.ReadFile(testguest.BuildWith(t, "runtime/registry/testdata/versioned", flags))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gather returns every sample as "name{l1=v1,...}" → value (counters,
// gauges, and a histogram's sample count).
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather (pedantic): %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func TestCollector(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	c := metrics.New()
	logger := slog.New(slog.DiscardHandler)
	rt, err := runtime.New(testhost.EngineOption(), runtime.WithLogger(logger), runtime.WithCallObserver(c.ObserveCall),
		runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	drained := make(chan struct{}, 1)
	reg := registry.New(rt, registry.WithLogger(logger), registry.WithSmokeTest(nil), registry.WithEventHandler(func(ev registry.Event) {
		if ev.Kind == registry.EventDrained && ev.Provider == "p" {
			drained <- struct{}{}
		}
	}))
	defer reg.Close(ctx)
	c.SetRegistry(reg)
	pr := prometheus.NewPedanticRegistry()
	pr.MustRegister(c)

	if err := reg.Register(ctx, "p", v1, &runtime.Policy{PoolSize: 3}); err != nil {
		t.Fatal(err)
	}
	h, _ := reg.Get("p")
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
	for range 3 {
		if _, err := cloud.SeedProvider(h, nil).MachineMetricsLabels(m); err != nil {
			t.Fatal(err)
		}
	}
	// Terminal: a providerSpec that is not JSON.
	bad := &clusterv1alpha1.Machine{}
	bad.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte("{not json")}
	if _, err := cloud.SeedProvider(h, nil).Get(bad); runtime.ErrorClass(err) != runtime.ClassTerminal {
		t.Fatalf("want a terminal error, got %v", err)
	}
	// A trap and a timeout from real guests.
	if err := reg.Register(ctx, "panics", guest(t, "v1", "panic"), nil); err != nil {
		t.Fatal(err)
	}
	hp, _ := reg.Get("panics")
	if _, err := cloud.SeedProvider(hp, nil).AddDefaults(clusterv1alpha1.MachineSpec{}); runtime.ErrorClass(err) != runtime.ClassTrap {
		t.Fatalf("want a trap, got %v", err)
	}
	if err := reg.Register(ctx, "hangs", guest(t, "v1", "hang"), nil); err != nil {
		t.Fatal(err)
	}
	hh, _ := reg.Get("hangs")
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = hh.AddDefaults(tctx, clusterv1alpha1.MachineSpec{}, nil)
	cancel()
	if runtime.ErrorClass(err) != runtime.ClassTimeout {
		t.Fatalf("want a timeout, got %v", err)
	}
	// A retried call is counted as a retry, not a call or an error.
	c.ObserveCall("p", abi.MethodGet, time.Millisecond, &runtime.CallError{Provider: "p", Method: abi.MethodGet,
		Class: runtime.ClassTransient, Err: runtime.ErrProviderClosed})
	// Reloads: one good, one rejected.
	if err := reg.Register(ctx, "p", v2, &runtime.Policy{PoolSize: 3}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(ctx, "p", []byte("garbage"), nil); err == nil {
		t.Fatal("garbage loaded")
	}
	// Wait for v1 to drain (its event comes once it is closed) so the
	// instance counters are final; the test's deadline bounds the wait.
	var timeout <-chan time.Time
	if d, ok := t.Deadline(); ok {
		timeout = time.After(time.Until(d) * 9 / 10)
	}
	select {
	case <-drained:
	case <-timeout:
		t.Fatalf("v1 not drained: %+v", reg.Status())
	}

	got := gather(t, pr)
	want := map[string]float64{
		`wasmprov_provider_calls_total{method=MachineMetricsLabels,provider=p}`:                                            3,
		`wasmprov_provider_call_duration_seconds{method=MachineMetricsLabels,provider=p}`:                                  3,
		`wasmprov_provider_calls_total{method=Get,provider=p}`:                                                             1,
		`wasmprov_provider_call_errors_total{class=terminal,method=Get,provider=p}`:                                        1,
		`wasmprov_provider_call_errors_total{class=trap,method=AddDefaults,provider=panics}`:                               1,
		`wasmprov_provider_call_errors_total{class=timeout,method=AddDefaults,provider=hangs}`:                             1,
		`wasmprov_provider_call_retries_total{method=Get,provider=p}`:                                                      1,
		`wasmprov_provider_reloads_total{provider=p,result=ok}`:                                                            2,
		`wasmprov_provider_reloads_total{provider=p,result=failed}`:                                                        1,
		`wasmprov_provider_pool_size{provider=p}`:                                                                          3,
		`wasmprov_provider_pool_in_use{provider=p}`:                                                                        0,
		`wasmprov_provider_draining_versions{provider=p}`:                                                                  0,
		`wasmprov_provider_serving{provider=p}`:                                                                            1,
		`wasmprov_provider_instances_discarded_total{provider=panics}`:                                                     1,
		`wasmprov_provider_instances_discarded_total{provider=hangs}`:                                                      1,
		fmt.Sprintf(`wasmprov_provider_info{image=,manifest_digest=,module_sha256=%s,provider=p,source=code}`, h.SHA256()): 1,
		`wasmprov_provider_stale{provider=p}`:                                                                              0,
		`wasmprov_provider_calls_total{method=AddDefaults,provider=hangs}`:                                                 1,
		`wasmprov_provider_instances_created_total{provider=p}`:                                                            2, // one per version
		`wasmprov_provider_pool_instances{provider=p}`:                                                                     1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if t.Failed() {
		var keys []string
		for k, v := range got {
			keys = append(keys, fmt.Sprintf("%s %v", k, v))
		}
		sort.Strings(keys)
		t.Logf("gathered:\n%s", strings.Join(keys, "\n"))
	}
	// Only the serving version has an info sample.
	n := 0
	for k := range got {
		if strings.HasPrefix(k, "wasmprov_provider_info{") && strings.Contains(k, ",provider=p,") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d info samples for p, want 1", n)
	}
}
