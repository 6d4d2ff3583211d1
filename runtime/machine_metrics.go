package runtime

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/hostfuncs"
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

func (c calls) SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *CallData) (err error) {
	p := c.p
	if !p.hasMetrics {
		return nil
	}
	defer p.observe(abi.MethodSetMetricsForMachines)(&err)
	call := c.newCall(ctx, abi.MethodSetMetricsForMachines, data)
	call.Machines = &machines
	err = p.invoke(ctx, call)
	if err == nil {
		var samples []MetricSample
		if samples, err = p.decodeMetrics(call); err == nil {
			p.samples.Store(&samples)
			return nil
		}
	}
	// Stale numbers would look current: a failed call leaves none.
	p.samples.Store(nil)
	return err
}

// decodeMetrics reads and checks a SetMetricsForMachines result. No
// output is no samples.
func (p *Provider) decodeMetrics(call *hostfuncs.Call) ([]MetricSample, error) {
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
	if err := checkMetricSamples(out.Metrics); err != nil {
		call.Logger().Warn("SetMetricsForMachines result refused", "error", err.Error())
		return nil, p.badResult(abi.MethodSetMetricsForMachines, "%v", err)
	}
	samples := out.Metrics
	for i := range samples {
		samples[i].Help = hostfuncs.PrintableLine(samples[i].Help)
		for k, v := range samples[i].Labels {
			samples[i].Labels[k] = hostfuncs.PrintableLine(v)
		}
	}
	sort.Slice(samples, func(i, j int) bool {
		if samples[i].Name != samples[j].Name {
			return samples[i].Name < samples[j].Name
		}
		return seriesKey(samples[i]) < seriesKey(samples[j])
	})
	return samples, nil
}

// checkMetricSamples enforces SPEC §4.3 on a whole result: the limits,
// Prometheus' naming rules, finite values, one type, help and label set
// per name, and no series twice. A registry would refuse the same at
// scrape time — for every provider at once.
func checkMetricSamples(samples []MetricSample) error {
	if len(samples) > MaxMetricSeries {
		return fmt.Errorf("%d series, more than %d", len(samples), MaxMetricSeries)
	}
	type family struct {
		typ, help string
		labels    []string
	}
	families := map[string]family{}
	seen := map[string]bool{}
	for i, s := range samples {
		switch {
		case len(s.Name) > MaxMetricNameBytes || !metricNameRE.MatchString(s.Name):
			return fmt.Errorf("metric %d: name %q is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes", i, truncate(s.Name, 64), MaxMetricNameBytes)
		case s.Type != abi.MetricGauge && s.Type != abi.MetricCounter:
			return fmt.Errorf("metric %s: type %q is neither %q nor %q", s.Name, truncate(s.Type, 32), abi.MetricGauge, abi.MetricCounter)
		case math.IsNaN(s.Value) || math.IsInf(s.Value, 0):
			return fmt.Errorf("metric %s: value %v is not finite", s.Name, s.Value)
		case s.Type == abi.MetricCounter && s.Value < 0:
			return fmt.Errorf("metric %s: a counter cannot be negative (%v)", s.Name, s.Value)
		case len(s.Help) > MaxMetricHelpBytes:
			return fmt.Errorf("metric %s: help longer than %d bytes", s.Name, MaxMetricHelpBytes)
		case len(s.Labels) > MaxMetricSeriesLabels:
			return fmt.Errorf("metric %s: %d labels, more than %d", s.Name, len(s.Labels), MaxMetricSeriesLabels)
		}
		names := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			switch {
			case len(k) > MaxMetricLabelNameBytes || !metricNameRE.MatchString(k) || strings.HasPrefix(k, "__"):
				return fmt.Errorf("metric %s: label name %q is not [a-zA-Z_][a-zA-Z0-9_]* of at most %d bytes without a leading __", s.Name, truncate(k, 64), MaxMetricLabelNameBytes)
			case len(v) > MaxMetricLabelValueBytes:
				return fmt.Errorf("metric %s: label %s has a value longer than %d bytes", s.Name, k, MaxMetricLabelValueBytes)
			}
			names = append(names, k)
		}
		sort.Strings(names)
		if f, ok := families[s.Name]; !ok {
			families[s.Name] = family{typ: s.Type, help: s.Help, labels: names}
		} else if f.typ != s.Type || f.help != s.Help || !slices.Equal(f.labels, names) {
			return fmt.Errorf("metric %s: series disagree on type, help or label names", s.Name)
		}
		key := s.Name + "\x00" + seriesKey(s)
		if seen[key] {
			return fmt.Errorf("metric %s: series %s twice", s.Name, seriesKey(s))
		}
		seen[key] = true
	}
	return nil
}

// seriesKey is a series' labels in a canonical form.
func seriesKey(s MetricSample) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
	}
	b.WriteByte('}')
	return b.String()
}
