package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime"

	"k8s.io/apimachinery/pkg/types"
)

// metricsProvider answers SetMetricsForMachines with out (raw JSON, nil
// for no output) and records the MachineList it was given.
func metricsProvider(t *testing.T, out *string, got *[]byte) *runtime.Provider {
	t.Helper()
	p, err := newRuntime(t).LoadFunc("metrics-probe", 0, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m != abi.MethodSetMetricsForMachines {
			return abi.StatusOK
		}
		b, err := h.Input(abi.InputMachineList)
		if err != nil {
			h.SetError("", err.Error(), 0)
			return abi.StatusError
		}
		*got = b
		if *out != "" {
			if err := h.Output([]byte(*out)); err != nil {
				h.SetError("", err.Error(), 0)
				return abi.StatusError
			}
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func machineList(names ...string) clusterv1alpha1.MachineList {
	var l clusterv1alpha1.MachineList
	for _, n := range names {
		l.Items = append(l.Items, *newMachine(n, types.UID("uid-"+n), map[string]any{"cloudProvider": "x"}))
	}
	return l
}

func TestSetMetricsForMachines(t *testing.T) {
	ctx := context.Background()
	out := `{"metrics":[
		{"name":"servers","type":"gauge","help":"Servers by type.","labels":{"type":"cx22","location":"fsn1"},"value":2},
		{"name":"servers","type":"gauge","help":"Servers by type.","labels":{"type":"cx32","location":"fsn1"},"value":1},
		{"name":"api_calls","type":"counter","value":7}]}`
	var input []byte
	p := metricsProvider(t, &out, &input)
	if err := p.SetMetricsForMachines(ctx, machineList("a", "b"), nil); err != nil {
		t.Fatal(err)
	}
	var list clusterv1alpha1.MachineList
	if err := json.Unmarshal(input, &list); err != nil || list.Kind != "MachineList" || len(list.Items) != 2 || list.Items[1].Name != "b" {
		t.Fatalf("the guest got %s (%v), want a MachineList of a and b", input, err)
	}
	var got []string
	for _, s := range p.MetricSamples() {
		got = append(got, fmt.Sprintf("%s %s %v %v", s.Name, s.Type, s.Labels, s.Value))
	}
	want := []string{
		"api_calls counter map[] 7",
		"servers gauge map[location:fsn1 type:cx22] 2",
		"servers gauge map[location:fsn1 type:cx32] 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// No output: no samples, not an error.
	out = ""
	if err := p.SetMetricsForMachines(ctx, machineList(), nil); err != nil {
		t.Fatal(err)
	}
	if s := p.MetricSamples(); len(s) != 0 {
		t.Errorf("after an empty answer: %v, want no samples", s)
	}
}

func TestSetMetricsForMachinesRefusesBadResults(t *testing.T) {
	good := `{"name":"servers","type":"gauge","labels":{"type":"cx22"},"value":1}`
	many := make([]string, runtime.MaxMetricSeries+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"name":"s","type":"gauge","labels":{"i":"%d"},"value":1}`, i)
	}
	for _, tc := range []struct{ name, out, want string }{
		{"too many series", `{"metrics":[` + strings.Join(many, ",") + `]}`, "1001 series, more than 1000"},
		{"invalid name", `{"metrics":[{"name":"bad-name","type":"gauge","value":1}]}`, `name "bad-name"`},
		{"unknown type", `{"metrics":[{"name":"x","type":"histogram","value":1}]}`, `type "histogram"`},
		{"not a number", `{"metrics":[{"name":"x","type":"gauge","value":"NaN"}]}`, "SPEC §4.3"},
		{"out of range", `{"metrics":[{"name":"x","type":"gauge","value":1e999}]}`, "SPEC §4.3"},
		{"negative counter", `{"metrics":[{"name":"x","type":"counter","value":-1}]}`, "counter cannot be negative"},
		{"duplicate series", `{"metrics":[` + good + `,` + good + `]}`, `series {type="cx22"} twice`},
		{"disagreeing label names", `{"metrics":[` + good + `,{"name":"servers","type":"gauge","labels":{"size":"l"},"value":1}]}`, "disagree"},
		{"label value too long", `{"metrics":[{"name":"x","type":"gauge","labels":{"l":"` + strings.Repeat("v", runtime.MaxMetricLabelValueBytes+1) + `"},"value":1}]}`, "longer than 256 bytes"},
		{"reserved label name", `{"metrics":[{"name":"x","type":"gauge","labels":{"__name__":"y"},"value":1}]}`, "leading __"},
		{"too many labels", `{"metrics":[{"name":"x","type":"gauge","labels":{` + manyLabels(runtime.MaxMetricSeriesLabels+1) + `},"value":1}]}`, "17 labels"},
		{"not the document", `[1,2]`, "SPEC §4.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := `{"metrics":[` + good + `]}`
			var input []byte
			p := metricsProvider(t, &out, &input)
			if err := p.SetMetricsForMachines(context.Background(), machineList("a"), nil); err != nil || len(p.MetricSamples()) != 1 {
				t.Fatalf("good result: %v, %d samples", err, len(p.MetricSamples()))
			}
			out = tc.out
			err := p.SetMetricsForMachines(context.Background(), machineList("a"), nil)
			expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, tc.want, `"metrics-probe"`)
			if s := p.MetricSamples(); s != nil {
				t.Errorf("a refused result left %d samples: stale numbers must not look current", len(s))
			}
		})
	}
}

func manyLabels(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf(`"l%d":"v"`, i)
	}
	return strings.Join(l, ",")
}

func TestSetMetricsForMachinesWithoutExport(t *testing.T) {
	// A module without the optional export reports nothing, like
	// machine-controller's no-op providers.
	rt := newRuntime(t)
	p, err := rt.LoadBytes(context.Background(), "plain", providerModule(0, nil).bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetMetricsForMachines(context.Background(), machineList("a"), nil); err != nil {
		t.Fatal(err)
	}
	if s := p.MetricSamples(); s != nil {
		t.Errorf("samples %v from a module without the export", s)
	}
	// With the export but a wrong signature the module is invalid.
	bad := providerModule(0, nil)
	bad.funcs = append(bad.funcs, genFunc{export: abi.MethodSetMetricsForMachines.Export(), results: []byte{valI64}, body: []byte{opI64Const, 0}})
	_, err = rt.LoadBytes(context.Background(), "bad", bad.bytes())
	if err == nil || !strings.Contains(err.Error(), `export "wasmprov_set_metrics_for_machines" has signature`) {
		t.Errorf("wrong signature: %v", err)
	}
}

func TestMetricNamePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"hetzner":     "wasmprov_guest_hetzner_",
		"hetzner-v2":  "wasmprov_guest_hetzner_v2_",
		"a.b":         "wasmprov_guest_a_b_",
		"ünïcode":     "wasmprov_guest__n_code_",
		"calls_total": "wasmprov_guest_calls_total_",
	} {
		if got := runtime.MetricNamePrefix(in); got != want {
			t.Errorf("MetricNamePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// largestMetricsResult is a SetMetricsForMachines result as large as the
// host accepts: MaxMetricSeries series of MaxMetricSeriesLabels labels with
// names of MaxMetricLabelNameBytes, values filling the result up to the
// output cap.
func largestMetricsResult(t testing.TB) string {
	labels := make(map[string]string, runtime.MaxMetricSeriesLabels)
	var out abi.MetricSamples
	for i := range runtime.MaxMetricSeries {
		labels = make(map[string]string, runtime.MaxMetricSeriesLabels)
		for l := range runtime.MaxMetricSeriesLabels {
			name := fmt.Sprintf("l%02d_%s", l, strings.Repeat("n", runtime.MaxMetricLabelNameBytes-4))
			// Values alike but for their ends: comparisons read them whole.
			labels[name] = fmt.Sprintf("%s%04d", strings.Repeat("v", 176), (i*7919+l)%runtime.MaxMetricSeries)
		}
		out.Metrics = append(out.Metrics, runtime.MetricSample{Name: "servers_by_everything", Type: abi.MetricGauge,
			Help: "Servers.", Labels: labels, Value: float64(i)})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4<<20 {
		t.Fatalf("the result is %d bytes, over the 4 MiB output cap", len(b))
	}
	return string(b)
}

// The host's work on the largest accepted result — decoding, checking and
// sorting it — is linear-ish and inside the call's deadline. The sort's
// comparator used to rebuild both series' label keys on every comparison:
// 1.1-1.4 s of host CPU, accepted 4.3-8.8 s into a call with a 1 s
// deadline on a loaded machine.
func TestRealTimeLargestMetricsResultWithinTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: a call with a 1 s deadline")
	}
	out := largestMetricsResult(t)
	var input []byte
	p := metricsProvider(t, &out, &input)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := p.SetMetricsForMachines(ctx, machineList("a"), nil)
	took := time.Since(start)
	t.Logf("%d bytes of result accepted in %v", len(out), took)
	if err != nil {
		t.Fatalf("the largest result was refused: %v", err)
	}
	if took > time.Second {
		t.Errorf("the result was accepted %v after the call's deadline", took-time.Second)
	}
	samples := p.MetricSamples()
	if len(samples) != runtime.MaxMetricSeries {
		t.Fatalf("%d samples, want %d", len(samples), runtime.MaxMetricSeries)
	}
	for i := 1; i < len(samples); i++ {
		if fmt.Sprint(samples[i-1].Labels) >= fmt.Sprint(samples[i].Labels) {
			t.Fatalf("samples %d and %d out of order", i-1, i)
		}
	}
}

// A result that arrives just before the deadline does not make the call
// end seconds after it: the host's own steps stop at the deadline.
func TestRealTimeMetricsResultAtTheDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: a call with a 1 s deadline")
	}
	out := largestMetricsResult(t)
	const deadline = time.Second
	p, err := newRuntime(t).LoadFunc("late-metrics", 0, func(ctx context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m == abi.MethodSetMetricsForMachines {
			d, _ := ctx.Deadline()
			time.Sleep(time.Until(d) - 20*time.Millisecond)
			if err := h.Output([]byte(out)); err != nil {
				return abi.StatusError
			}
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		err := p.SetMetricsForMachines(ctx, machineList("a"), nil)
		took := time.Since(start)
		cancel()
		t.Logf("returned after %v: %v", took, err)
		if took > deadline+100*time.Millisecond {
			t.Errorf("returned %v after the deadline", took-deadline)
		}
		if err != nil && runtime.ErrorClass(err) != runtime.ClassTimeout {
			t.Errorf("want success or a timeout, got %v", err)
		}
	}
}
