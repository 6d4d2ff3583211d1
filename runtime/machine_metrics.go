package runtime

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/guesttext"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/provider"
)

// MetricSample is one series a provider reported from
// SetMetricsForMachines, as checked by the host.
type MetricSample = abi.MetricSample

// Limits on what one SetMetricsForMachines result may hold (abi/SPEC.md
// §4.3). A result past any of them is refused whole: a provider must not
// be able to grow the controller's /metrics without bound, nor make one
// scrape fail for every other provider.
const (
	MaxMetricSeries         = 1000
	MaxMetricSeriesLabels   = 16
	MaxMetricNameBytes      = 128
	MaxMetricHelpBytes      = 1024
	MaxMetricLabelNameBytes = 63
	// MaxMetricLabelValueBytes is the same bound as a metrics label of
	// MachineMetricsLabels.
	MaxMetricLabelValueBytes = MaxMetricsLabelValueBytes
)

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// MetricSamples returns the samples of p's last accepted
// SetMetricsForMachines, sorted by name then labels; nil before the first
// call, after a refused one, and for a module without the optional export.
// The caller must not modify them.
func (p *Provider) MetricSamples() []MetricSample {
	if s := p.samples.Load(); s != nil {
		return *s
	}
	return nil
}

// MetricNamePrefix returns the prefix the host puts before the names of
// p's samples when it exposes them: wasmprov_guest_<provider>_, the
// provider's name with every character a metric name cannot hold turned
// into "_". Two providers never share a name space, and a guest cannot
// name one of the host's own metrics.
func MetricNamePrefix(provider string) string {
	var b strings.Builder
	b.WriteString("wasmprov_guest_")
	for _, r := range provider {
		if r < 0x80 && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	return b.String()
}

// SetMetricsForMachines hands the module every Machine it serves and
// replaces the provider's metric samples with its answer (see
// MetricSamples). A module without the optional export reports none: nil
// error, no samples.
func (p *Provider) SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *provider.Data) (err error) {
	if !p.hasMetrics {
		return nil
	}
	defer p.observe(abi.MethodSetMetricsForMachines)(&err)
	call := p.newCall(ctx, abi.MethodSetMetricsForMachines, data)
	call.Machines = &machines
	err = p.invoke(ctx, call)
	if err == nil {
		var samples []MetricSample
		if samples, err = p.decodeMetrics(ctx, call); err == nil {
			p.samples.Store(&samples)
			return nil
		}
	}
	// Stale numbers would look current: a failed call leaves none.
	p.samples.Store(nil)
	return err
}

// decodeMetrics reads and checks a SetMetricsForMachines result. No
// output is no samples. Its work is linear in the result but for one sort
// by precomputed keys (the largest result: ~5 MB, tens of milliseconds),
// and the call's deadline holds for it too: a result still being read
// when the deadline passes is a timeout, not samples.
func (p *Provider) decodeMetrics(ctx context.Context, call *hostmodule.Call) ([]MetricSample, error) {
	if err := p.refusedOutput(call); err != nil {
		return nil, err
	}
	if len(call.Output) == 0 {
		return []MetricSample{}, nil
	}
	var out abi.MetricSamples
	if err := p.decodeOutput(call, &out, docMetricSamples); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, p.contextError(call.Method, err)
	}
	samples := out.Metrics
	if len(samples) > MaxMetricSeries {
		return nil, p.refuseMetrics(call, fmt.Errorf("%d series, more than %d", len(samples), MaxMetricSeries))
	}
	// Printable before the checks: the bounds hold for what is exposed,
	// and two values that differ only in what is replaced are one series.
	for i := range samples {
		samples[i].Help = guesttext.PrintableLine(samples[i].Help)
		for k, v := range samples[i].Labels {
			samples[i].Labels[k] = guesttext.PrintableLine(v)
		}
	}
	keys, err := checkMetricSamples(samples)
	if err != nil {
		return nil, p.refuseMetrics(call, err)
	}
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	sorted := make([]MetricSample, len(samples))
	for i, j := range order {
		sorted[i] = samples[j]
	}
	if err := ctx.Err(); err != nil {
		return nil, p.contextError(call.Method, err)
	}
	return sorted, nil
}

func (p *Provider) refuseMetrics(call *hostmodule.Call, err error) error {
	call.Logger().Warn("SetMetricsForMachines result refused", "error", err.Error())
	return p.badResult(abi.MethodSetMetricsForMachines, "%v", err)
}

// checkMetricSamples enforces SPEC §4.3 on a whole result: the limits,
// Prometheus' naming rules, finite values, one type, help and label set
// per name, and no series twice. A registry would refuse the same at
// scrape time — for every provider at once. It returns each sample's key,
// its name and labels in a canonical form, whose order is the result's.
func checkMetricSamples(samples []MetricSample) ([]string, error) {
	if len(samples) > MaxMetricSeries {
		return nil, fmt.Errorf("%d series, more than %d", len(samples), MaxMetricSeries)
	}
	type family struct {
		typ, help string
		labels    []string
	}
	families := map[string]family{}
	seen := make(map[string]bool, len(samples))
	keys := make([]string, len(samples))
	for i, s := range samples {
		switch {
		case len(s.Name) > MaxMetricNameBytes || !metricNameRE.MatchString(s.Name):
			return nil, fmt.Errorf("metric %d: name %q is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes", i, truncate(s.Name, 64), MaxMetricNameBytes)
		case s.Type != abi.MetricGauge && s.Type != abi.MetricCounter:
			return nil, fmt.Errorf("metric %s: type %q is neither %q nor %q", s.Name, truncate(s.Type, 32), abi.MetricGauge, abi.MetricCounter)
		case math.IsNaN(s.Value) || math.IsInf(s.Value, 0):
			return nil, fmt.Errorf("metric %s: value %v is not finite", s.Name, s.Value)
		case s.Type == abi.MetricCounter && s.Value < 0:
			return nil, fmt.Errorf("metric %s: a counter cannot be negative (%v)", s.Name, s.Value)
		case len(s.Help) > MaxMetricHelpBytes:
			return nil, fmt.Errorf("metric %s: help longer than %d bytes", s.Name, MaxMetricHelpBytes)
		case len(s.Labels) > MaxMetricSeriesLabels:
			return nil, fmt.Errorf("metric %s: %d labels, more than %d", s.Name, len(s.Labels), MaxMetricSeriesLabels)
		}
		names := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			switch {
			case len(k) > MaxMetricLabelNameBytes || !metricNameRE.MatchString(k) || strings.HasPrefix(k, "__"):
				return nil, fmt.Errorf("metric %s: label name %q is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes without a leading __", s.Name, truncate(k, 64), MaxMetricLabelNameBytes)
			case len(v) > MaxMetricLabelValueBytes:
				return nil, fmt.Errorf("metric %s: label %s has a value longer than %d bytes", s.Name, k, MaxMetricLabelValueBytes)
			}
			names = append(names, k)
		}
		sort.Strings(names)
		if f, ok := families[s.Name]; !ok {
			families[s.Name] = family{typ: s.Type, help: s.Help, labels: names}
		} else if f.typ != s.Type || f.help != s.Help || !slices.Equal(f.labels, names) {
			return nil, fmt.Errorf("metric %s: series disagree on type, help or label names", s.Name)
		}
		key := seriesKey(s.Name, names, s.Labels)
		if seen[key] {
			return nil, fmt.Errorf("metric %s: series %s twice", s.Name, key[len(s.Name)+1:])
		}
		seen[key] = true
		keys[i] = key
	}
	return keys, nil
}

// seriesKey is a series' name and labels (names sorted) in a canonical
// form: name, NUL, then {k="v",...}. A name holds no NUL, so keys sort by
// name first, then by labels.
func seriesKey(name string, names []string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteString("\x00{")
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}
