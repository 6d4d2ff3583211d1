package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/controller/infrastructure"
	"github.com/wasmprov/wasmprov/controller/internal/workers"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	wasmruntime "github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// The Grafana dashboard and the alerting rules in monitoring/ name
// metrics and labels in PromQL. These tests check every one of them
// against what the host exports, learnt from the real collectors: the
// runtime's (runtime/metrics), the Machine controller's, the WasmMachine
// and WasmProvider reconcilers' (each built with in-memory clients and
// registered on a registry, as cmd/wasmprov does), controller-runtime's
// (a worker loop of controller/internal/workers run once), and the
// registry events counter, which lives in package main
// (cmd/wasmprov/controller.go) and is read from its source with go/ast.

const (
	dashboardFile = "monitoring/grafana-dashboard.json"
	alertsFile    = "monitoring/alerts.yaml"
	// eventsSource holds the registry events counter (package main).
	eventsSource = "../../cmd/wasmprov/controller.go"
)

// exported maps every series name PromQL can select to its label names:
// a histogram's _bucket (with le), _sum and _count, not its base name.
type exported map[string]map[string]bool

func (e exported) add(name string, labels ...string) {
	if e[name] == nil {
		e[name] = map[string]bool{}
	}
	for _, l := range labels {
		e[name][l] = true
	}
}

// addFamily adds a gathered family under the names its type exposes.
// histograms records the base names of histograms and summaries.
func (e exported) addFamily(mf *dto.MetricFamily, histograms map[string]bool) {
	labels := []string{}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			labels = append(labels, lp.GetName())
		}
	}
	n := mf.GetName()
	switch mf.GetType() {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		histograms[n] = true
		e.add(n+"_bucket", append(labels, "le")...)
		e.add(n+"_sum", labels...)
		e.add(n+"_count", labels...)
	case dto.MetricType_SUMMARY:
		histograms[n] = true
		e.add(n, append(labels, "quantile")...)
		e.add(n+"_sum", labels...)
		e.add(n+"_count", labels...)
	default:
		e.add(n, labels...)
	}
}

// recordingRegisterer registers on a registry and remembers what, so the
// collectors can be asked for their descriptions too.
type recordingRegisterer struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// describedCollector emits one sample of each description of the
// collectors it wraps, so that a gather names the families and their
// labels even when a collector has no sample to give (a vector with no
// children, a family read from a registry with no provider loaded).
// prometheus.Desc has no accessors; a constant metric of it, gathered,
// shows its name and label names.
type describedCollector struct {
	descs   []*prometheus.Desc
	samples []prometheus.Metric
}

func newDescribedCollector(cs []prometheus.Collector) (*describedCollector, error) {
	d := &describedCollector{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for desc := range ch {
			m, err := sampleOf(desc)
			if err != nil {
				return nil, err
			}
			d.descs = append(d.descs, desc)
			d.samples = append(d.samples, m)
		}
	}
	return d, nil
}

// sampleOf is a constant metric of desc: the number of its variable labels
// is the one a constant metric accepts.
func sampleOf(desc *prometheus.Desc) (prometheus.Metric, error) {
	var err error
	for n := 0; n <= 32; n++ {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "x"
		}
		var m prometheus.Metric
		if m, err = prometheus.NewConstMetric(desc, prometheus.UntypedValue, 0, vals...); err == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", desc, err)
}

func (d *describedCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range d.descs {
		ch <- desc
	}
}

func (d *describedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range d.samples {
		ch <- m
	}
}

var exportedOnce = sync.OnceValues(harvest)

// exportedMetrics is what the host exports, harvested once per test binary.
func exportedMetrics(t *testing.T) exported {
	t.Helper()
	e, err := exportedOnce()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func harvest() (exported, error) {
	quiet := slog.New(slog.DiscardHandler)
	reg := &recordingRegisterer{Registry: prometheus.NewRegistry()}

	// The runtime's calls and pools. The calls' vectors get children (a
	// call, a failed call, a call that reached a closed version) so that
	// the histogram is gathered as one; the families read from the
	// registry at scrape time are known by their descriptions.
	calls := metrics.New()
	calls.ObserveCall("p", abi.MethodCreate, time.Millisecond, nil)
	calls.ObserveCall("p", abi.MethodCreate, time.Millisecond, errors.New("boom"))
	calls.ObserveCall("p", abi.MethodCreate, 0, wasmruntime.ErrProviderClosed)
	reg.MustRegister(calls)

	// The Machine controller: registers its metrics in New.
	if _, err := controller.New(controller.Options{Machines: noMachines{}, Providers: controller.NewMapSource(nil),
		Registerer: reg, MetricsInterval: -1, Logger: quiet}); err != nil {
		return nil, fmt.Errorf("controller.New: %w", err)
	}

	// The WasmMachine reconciler, on controller-runtime's fake client (its
	// WasmMachine count lists through it).
	c := fake.NewClientBuilder().WithScheme(controller.Scheme).Build()
	if _, err := infrastructure.NewMachineReconciler(infrastructure.MachineOptions{Client: c, APIReader: c,
		Providers: controller.NewMapSource(nil), Registerer: reg, Logger: quiet}); err != nil {
		return nil, fmt.Errorf("infrastructure.NewMachineReconciler: %w", err)
	}

	// The WasmProvider reconciler.
	if _, err := wasmprovider.New(wasmprovider.Options{Client: noWasmProviders{}, Kube: kubefake.New(), Loader: noLoader{},
		Registerer: reg, Logger: quiet}); err != nil {
		return nil, fmt.Errorf("wasmprovider.New: %w", err)
	}

	e := exported{}
	histograms := map[string]bool{}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		e.addFamily(mf, histograms)
	}
	dc, err := newDescribedCollector(reg.collectors)
	if err != nil {
		return nil, err
	}
	described := prometheus.NewRegistry()
	if err := described.Register(dc); err != nil {
		return nil, err
	}
	if mfs, err = described.Gather(); err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		// A description does not tell a histogram: those the gather
		// above did not show (no sample) would be taken for plain
		// families here, so the collectors above are given samples.
		if !histograms[mf.GetName()] {
			e.addFamily(mf, histograms)
		}
	}

	// The registry events counter, from cmd/wasmprov's source.
	vecs, err := counterVecsIn(eventsSource)
	if err != nil {
		return nil, err
	}
	for name, labels := range vecs {
		e.add(name, labels...)
	}

	// controller-runtime's own, on its registry (which cmd/wasmprov
	// serves beside its own): a worker loop as the controllers run one,
	// reconciling one key, so that its histogram has a sample.
	if err := runWorkersOnce(quiet); err != nil {
		return nil, err
	}
	if mfs, err = crmetrics.Registry.Gather(); err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		e.addFamily(mf, histograms)
	}
	return e, nil
}

// runWorkersOnce runs a controller of controller/internal/workers until
// it has reconciled one key and controller-runtime has recorded it.
func runWorkersOnce(log *slog.Logger) error {
	q := workers.NewQueue("monitoring-test", clock.RealClock{})
	c, err := workers.New("monitoring-test", q, 1, log, reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	}))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "n"}})
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mfs, err := crmetrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, mf := range mfs {
			if mf.GetName() == "controller_runtime_reconcile_time_seconds" {
				return nil
			}
		}
	}
	return errors.New("controller-runtime recorded no reconcile in 30s")
}

// counterVecsIn returns the name and label names of every
// prometheus.NewCounterVec(prometheus.CounterOpts{Name: "…"}, []string{…})
// in a Go source file.
func counterVecsIn(path string) (map[string][]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "NewCounterVec" {
			return true
		}
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		var name string
		for _, el := range opts.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						name, _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
		labels, ok := call.Args[1].(*ast.CompositeLit)
		if name == "" || !ok {
			return true
		}
		out[name] = []string{}
		for _, el := range labels.Elts {
			if lit, ok := el.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				l, _ := strconv.Unquote(lit.Value)
				out[name] = append(out[name], l)
			}
		}
		return true
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prometheus.NewCounterVec with a literal Name", path)
	}
	return out, nil
}

// noMachines is a MachineClient of no Machines; the controller is never
// run, only built.
type noMachines struct{}

func (noMachines) Get(context.Context, string, string) (*clusterv1alpha1.Machine, error) {
	return nil, errors.New("no machines")
}
func (noMachines) List(context.Context, string, metav1.ListOptions) (*clusterv1alpha1.MachineList, error) {
	return &clusterv1alpha1.MachineList{}, nil
}
func (noMachines) Watch(context.Context, string, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}
func (noMachines) Update(_ context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return m, nil
}
func (noMachines) UpdateStatus(_ context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return m, nil
}

// noWasmProviders is a WasmProvider client of none.
type noWasmProviders struct{}

func (noWasmProviders) Get(context.Context, string) (*wasmprovv1alpha1.WasmProvider, error) {
	return nil, errors.New("no wasmproviders")
}
func (noWasmProviders) List(context.Context, metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error) {
	return &wasmprovv1alpha1.WasmProviderList{}, nil
}
func (noWasmProviders) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}
func (noWasmProviders) UpdateStatus(_ context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error) {
	return wp, nil
}

// noLoader is a Loader that loads nothing.
type noLoader struct{}

func (noLoader) RegisterImage(context.Context, string, registry.Image) error { return errors.New("no") }
func (noLoader) Register(context.Context, string, []byte, *wasmruntime.Policy) error {
	return errors.New("no")
}
func (noLoader) Unregister(string) error   { return nil }
func (noLoader) Status() []registry.Status { return nil }

// --- PromQL, as far as the check needs it ---

// The metrics the check knows by prefix; any other name (up, a recording
// rule) is left alone.
var (
	metricRE = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:$.])((?:wasmprov_|machine_controller_|controller_runtime_|workqueue_)[a-zA-Z0-9_:]*)`)
	// A selector: a metric name (or none) and its matchers.
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^{}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)`)
	// Grafana's label_values(metric, label) and label_values(metric{…}, label).
	labelValuesRE = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^{}]*\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
	// {{label}} in a legend, {{ $labels.label }} in an annotation.
	legendRE     = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	annotationRE = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	// Prometheus gives every scraped series these.
	targetLabels = []string{"job", "instance"}
)

// stripStrings blanks the contents of PromQL's string literals, so that a
// label value never reads as a name.
func stripStrings(expr string) (string, error) {
	var b strings.Builder
	var quote rune
	escaped := false
	for _, r := range expr {
		switch {
		case quote == 0:
			if r == '"' || r == '\'' || r == '`' {
				quote = r
			}
			b.WriteRune(r)
		case escaped:
			escaped = false
		case r == '\\' && quote != '`':
			escaped = true
		case r == quote:
			quote = 0
			b.WriteRune(r)
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("unterminated string in %q", expr)
	}
	return b.String(), nil
}

// balanced reports unbalanced (), {} and [].
func balanced(expr string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	for _, r := range expr {
		switch r {
		case '(', '{', '[':
			stack = append(stack, r)
		case ')', '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}

// checkExpr checks the metrics and labels expr names against e. It
// returns the label names of the metrics expr selects (nil if it selects
// none the check knows), for the legends and annotations to be checked
// against.
func (e exported) checkExpr(expr string) (map[string]bool, error) {
	s, err := stripStrings(expr)
	if err != nil {
		return nil, err
	}
	if err := balanced(s); err != nil {
		return nil, err
	}
	var labels map[string]bool
	for _, m := range metricRE.FindAllStringSubmatch(s, -1) {
		name := m[1]
		known, ok := e[name]
		if !ok {
			return nil, fmt.Errorf("unknown metric %s", name)
		}
		if labels == nil {
			labels = map[string]bool{}
			for _, l := range targetLabels {
				labels[l] = true
			}
		}
		for l := range known {
			labels[l] = true
		}
	}
	for _, m := range selectorRE.FindAllStringSubmatch(s, -1) {
		known, ok := e[m[1]]
		if !ok {
			continue // not a metric the check knows (or a bare {…})
		}
		for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
			if l := mm[1]; l != "__name__" && !known[l] && !slices.Contains(targetLabels, l) {
				return nil, fmt.Errorf("unknown label %s of %s", l, m[1])
			}
		}
	}
	for _, m := range labelValuesRE.FindAllStringSubmatch(s, -1) {
		known, ok := e[m[1]]
		if !ok {
			if metricRE.MatchString(" " + m[1]) {
				return nil, fmt.Errorf("unknown metric %s", m[1])
			}
			continue
		}
		if !known[m[2]] && !slices.Contains(targetLabels, m[2]) {
			return nil, fmt.Errorf("unknown label %s of %s", m[2], m[1])
		}
	}
	if labels == nil {
		return nil, nil
	}
	for _, m := range groupingRE.FindAllStringSubmatch(s, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !labels[l] {
				return nil, fmt.Errorf("unknown label %s in %q: no metric of the expression has it", l, strings.TrimSpace(m[0]))
			}
		}
	}
	return labels, nil
}

// checkTemplate checks the labels a legend or an annotation names.
func checkTemplate(re *regexp.Regexp, text string, labels map[string]bool) error {
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if labels != nil && !labels[m[1]] {
			return fmt.Errorf("%q names label %s, which no metric of the expression has", text, m[1])
		}
	}
	return nil
}

func TestMonitoringExportedMetrics(t *testing.T) {
	e := exportedMetrics(t)
	for name, labels := range map[string][]string{
		metrics.CallsTotal:                                      {"provider", "method"},
		metrics.CallErrorsTotal:                                 {"provider", "method", "class"},
		metrics.CallDurationSeconds + "_bucket":                 {"provider", "method", "le"},
		metrics.PoolInstances:                                   {"provider"},
		metrics.Info:                                            {"provider", "module_sha256", "source", "image", "manifest_digest"},
		metrics.ReloadsTotal:                                    {"provider", "result"},
		metrics.HTTPRateLimit:                                   {"provider"},
		metrics.HTTPTooManyTotal:                                {"provider"},
		metrics.HTTPThrottledSeconds:                            {"provider"},
		metrics.HTTPDeadlineTotal:                               {"provider"},
		"machine_controller_machines_total":                     {"kubelet_version", "os", "provider"},
		"machine_controller_workers":                            nil,
		"wasmprov_controller_reconciles_total":                  {"result"},
		"wasmprov_controller_reconcile_duration_seconds_bucket": {"le"},
		"wasmprov_wasmmachines_total":                           {"os", "provider"},
		"wasmprov_wasmmachine_reconciles_total":                 {"result"},
		"wasmprov_wasmmachine_terminal_errors_total":            nil,
		"wasmprov_wasmprovider_reconciles_total":                {"result"},
		"wasmprov_registry_events_total":                        {"provider", "kind"},
		"controller_runtime_reconcile_total":                    {"controller", "result"},
		"controller_runtime_reconcile_time_seconds_bucket":      {"controller", "le"},
		"workqueue_depth":                                       {"name"},
	} {
		known, ok := e[name]
		if !ok {
			t.Errorf("%s: not harvested", name)
			continue
		}
		for _, l := range labels {
			if !known[l] {
				t.Errorf("%s: label %s not harvested (have %v)", name, l, known)
			}
		}
	}
	if _, ok := e[metrics.CallDurationSeconds]; ok {
		t.Errorf("%s: a histogram's base name is no series", metrics.CallDurationSeconds)
	}
}

// The checker itself: a dashboard or a rule naming what the host does not
// export fails.
func TestMonitoringCheckerRejectsUnknown(t *testing.T) {
	e := exportedMetrics(t)
	for _, tc := range []struct {
		name, expr, legend, wantErr string
	}{
		{name: "ok", expr: `sum by (provider, method) (rate(wasmprov_provider_calls_total{provider=~"$provider"}[$__rate_interval]))`,
			legend: "{{provider}} {{method}}"},
		{name: "histogram", expr: `histogram_quantile(0.99, sum by (le, provider) (rate(wasmprov_provider_call_duration_seconds_bucket[5m])))`},
		{name: "label value is no name", expr: `wasmprov_provider_calls_total{method="wasmprov_provider_callz_total"}`},
		{name: "variable", expr: `label_values(wasmprov_provider_calls_total, provider)`},
		{name: "other metrics are not checked", expr: `up{job="wasmprov"} == 0`},
		{name: "misspelt metric", expr: `sum(rate(wasmprov_provider_callz_total[5m]))`, wantErr: "unknown metric wasmprov_provider_callz_total"},
		{name: "misspelt in a variable", expr: `label_values(wasmprov_provider_callz_total, provider)`, wantErr: "unknown metric wasmprov_provider_callz_total"},
		{name: "histogram base name", expr: `rate(wasmprov_provider_call_duration_seconds[5m])`, wantErr: "unknown metric wasmprov_provider_call_duration_seconds"},
		{name: "bucket of a counter", expr: `rate(wasmprov_provider_calls_total_bucket[5m])`, wantErr: "unknown metric"},
		{name: "misspelt controller metric", expr: `machine_controller_machine_total`, wantErr: "unknown metric machine_controller_machine_total"},
		{name: "misspelt controller-runtime metric", expr: `controller_runtime_reconciles_total`, wantErr: "unknown metric controller_runtime_reconciles_total"},
		{name: "misspelt queue label", expr: `sum by (queue) (workqueue_depth)`, wantErr: "unknown label queue"},
		{name: "misspelt matcher", expr: `wasmprov_provider_call_errors_total{clas!="canceled"}`, wantErr: "unknown label clas of wasmprov_provider_call_errors_total"},
		{name: "label of another metric", expr: `wasmprov_provider_serving{method="Create"}`, wantErr: "unknown label method of wasmprov_provider_serving"},
		{name: "misspelt by", expr: `sum by (providr) (rate(wasmprov_provider_calls_total[5m]))`, wantErr: "unknown label providr"},
		{name: "misspelt without", expr: `sum without (instanc, methd) (wasmprov_provider_calls_total)`, wantErr: "unknown label instanc"},
		{name: "misspelt variable label", expr: `label_values(wasmprov_provider_calls_total, providers)`, wantErr: "unknown label providers"},
		{name: "unbalanced", expr: `sum(rate(wasmprov_provider_calls_total[5m])`, wantErr: "unclosed"},
		{name: "legend", expr: `sum by (provider) (rate(wasmprov_provider_calls_total[5m]))`, legend: "{{ class }}", wantErr: "names label class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels, err := e.checkExpr(tc.expr)
			if err == nil {
				err = checkTemplate(legendRE, tc.legend, labels)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tc.expr, err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("%s: no error, want %q", tc.expr, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("%s: %v, want %q", tc.expr, err, tc.wantErr)
			}
		})
	}
}

// promQL is one expression of a file, where it is and the templates
// (legends, annotations) drawing on its labels.
type promQL struct {
	where, expr string
	legend      string
}

// dashboardExprs walks a dashboard for its PromQL: every target's expr
// (with its legendFormat) and every query variable's query.
func dashboardExprs(v any, where string, out *[]promQL) {
	switch v := v.(type) {
	case map[string]any:
		here := where
		if title, ok := v["title"].(string); ok {
			here = where + "/" + title
		} else if name, ok := v["name"].(string); ok {
			here = where + "/" + name
		}
		if expr, ok := v["expr"].(string); ok {
			legend, _ := v["legendFormat"].(string)
			*out = append(*out, promQL{where: here, expr: expr, legend: legend})
		}
		for _, k := range []string{"query", "definition"} {
			if q, ok := v[k].(string); ok && v["type"] != "datasource" {
				*out = append(*out, promQL{where: here + "." + k, expr: q})
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			dashboardExprs(v[k], here, out)
		}
	case []any:
		for _, x := range v {
			dashboardExprs(x, where, out)
		}
	}
}

func TestGrafanaDashboard(t *testing.T) {
	e := exportedMetrics(t)
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []map[string]any `json:"list"`
		} `json:"templating"`
		Panels []map[string]any `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("%s: title %q, uid %q, schemaVersion %d: want a title, a uid and a schemaVersion of Grafana 9 or later",
			dashboardFile, d.Title, d.UID, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		name, _ := v["name"].(string)
		vars[name], _ = v["type"].(string)
		if name == "datasource" && v["query"] != "prometheus" {
			t.Errorf("%s: variable datasource: query %v, want prometheus", dashboardFile, v["query"])
		}
	}
	if vars["datasource"] != "datasource" || vars["provider"] != "query" {
		t.Errorf("%s: variables %v: want datasource (datasource) and provider (query)", dashboardFile, vars)
	}

	// Every panel on the chosen data source, ids unique, rows as listed.
	ids := map[float64]string{}
	titles := map[string]bool{}
	var rows []string
	var walk func(panels []any)
	check := func(p map[string]any) {
		title, _ := p["title"].(string)
		id, _ := p["id"].(float64)
		if other, dup := ids[id]; dup || id == 0 {
			t.Errorf("%s: panel %q: id %v missing or also %q's", dashboardFile, title, p["id"], other)
		}
		ids[id] = title
		if titles[title] {
			t.Errorf("%s: two panels titled %q", dashboardFile, title)
		}
		titles[title] = true
		if p["type"] == "row" {
			rows = append(rows, title)
			return
		}
		if _, ok := p["gridPos"].(map[string]any); !ok {
			t.Errorf("%s: panel %q: no gridPos", dashboardFile, title)
		}
		ds, _ := p["datasource"].(map[string]any)
		if ds["uid"] != "${datasource}" {
			t.Errorf("%s: panel %q: datasource %v, want uid ${datasource}", dashboardFile, title, p["datasource"])
		}
		targets, _ := p["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("%s: panel %q: no targets", dashboardFile, title)
		}
		for _, tg := range targets {
			tds, _ := tg.(map[string]any)["datasource"].(map[string]any)
			if tds != nil && tds["uid"] != "${datasource}" {
				t.Errorf("%s: panel %q: target datasource %v, want uid ${datasource}", dashboardFile, title, tds)
			}
		}
	}
	walk = func(panels []any) {
		for _, p := range panels {
			pm, _ := p.(map[string]any)
			check(pm)
			if sub, ok := pm["panels"].([]any); ok {
				walk(sub) // a collapsed row's
			}
		}
	}
	all := make([]any, len(d.Panels))
	for i, p := range d.Panels {
		all[i] = p
	}
	walk(all)
	if want := []string{"Calls", "Pools", "HTTP pacing", "Versions", "Controllers"}; !slices.Equal(rows, want) {
		t.Errorf("%s: rows %q, want %q", dashboardFile, rows, want)
	}

	var exprs []promQL
	dashboardExprs(map[string]any{"panels": all}, "", &exprs)
	for _, v := range d.Templating.List {
		dashboardExprs(v, "templating", &exprs)
	}
	used := checkAll(t, e, dashboardFile, exprs)
	for _, want := range []string{
		metrics.CallsTotal, metrics.CallErrorsTotal, metrics.CallDurationSeconds + "_bucket",
		metrics.PoolInstances, metrics.PoolInUse, metrics.InstancesCreatedTotal, metrics.InstancesDiscardedTotal,
		metrics.HTTPThrottledTotal, metrics.HTTPThrottledSeconds, metrics.HTTPTooManyTotal, metrics.HTTPDeadlineTotal, metrics.HTTPRateLimit,
		metrics.ReloadsTotal, metrics.Serving, metrics.Stale, metrics.Info,
		"wasmprov_controller_reconciles_total", "wasmprov_wasmmachine_reconciles_total",
		"wasmprov_controller_instance_creates_total", "wasmprov_wasmmachine_instance_creates_total",
		"wasmprov_wasmmachine_terminal_errors_total", "machine_controller_machines_total",
	} {
		if !used[want] {
			t.Errorf("%s: no panel shows %s", dashboardFile, want)
		}
	}
}

// checkAll checks exprs and returns the metrics they name.
func checkAll(t *testing.T, e exported, file string, exprs []promQL) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for _, q := range exprs {
		labels, err := e.checkExpr(q.expr)
		if err == nil {
			err = checkTemplate(legendRE, q.legend, labels)
		}
		if err == nil {
			err = checkTemplate(annotationRE, q.legend, labels)
		}
		if err != nil {
			t.Errorf("%s: %s: %v\n\t%s", file, q.where, err, q.expr)
			continue
		}
		s, _ := stripStrings(q.expr)
		for _, m := range metricRE.FindAllStringSubmatch(s, -1) {
			used[m[1]] = true
		}
	}
	if len(used) == 0 {
		t.Errorf("%s: no metric found in %d expressions", file, len(exprs))
	}
	return used
}

// rules is a Prometheus rule file.
type rules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func TestAlertingRules(t *testing.T) {
	e := exportedMetrics(t)
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var r rules
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(r.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	alerts := map[string]bool{}
	var exprs []promQL
	for _, g := range r.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("%s: group %q: a name and rules are required", alertsFile, g.Name)
		}
		for i, rule := range g.Rules {
			where := fmt.Sprintf("%s[%d] %s", g.Name, i, rule.Alert)
			if rule.Alert == "" || rule.Expr == "" || rule.For == "" || rule.Labels["severity"] == "" ||
				rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
				t.Errorf("%s: %s: alert, expr, for, labels.severity, annotations.summary and .description are required", alertsFile, where)
			}
			if alerts[rule.Alert] {
				t.Errorf("%s: %s: alert name used twice", alertsFile, where)
			}
			alerts[rule.Alert] = true
			if d, err := time.ParseDuration(rule.For); err != nil || d <= 0 {
				t.Errorf("%s: %s: for %q: want a positive duration", alertsFile, where, rule.For)
			}
			if s := rule.Labels["severity"]; s != "" && s != "warning" && s != "critical" && s != "info" {
				t.Errorf("%s: %s: severity %q: want critical, warning or info", alertsFile, where, s)
			}
			if !strings.Contains(rule.Annotations["description"], "docs/OPERATIONS.md#") {
				t.Errorf("%s: %s: the description names no runbook (docs/OPERATIONS.md#…)", alertsFile, where)
			}
			exprs = append(exprs, promQL{where: where, expr: rule.Expr,
				legend: rule.Annotations["summary"] + "\n" + rule.Annotations["description"]})
		}
	}
	used := checkAll(t, e, alertsFile, exprs)
	for _, want := range []string{
		metrics.Serving, metrics.Stale, metrics.CallErrorsTotal, metrics.CallsTotal,
		metrics.HTTPTooManyTotal, metrics.HTTPThrottledSeconds, metrics.HTTPDeadlineTotal,
		"wasmprov_controller_reconciles_total", "wasmprov_wasmmachine_reconciles_total",
		"wasmprov_wasmmachine_terminal_errors_total", metrics.InstancesDiscardedTotal,
	} {
		if !used[want] {
			t.Errorf("%s: no alert on %s", alertsFile, want)
		}
	}
}
