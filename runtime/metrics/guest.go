package metrics

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// GuestFamiliesSkipped is the gauge of a provider's guest metric families
// left out of the last scrape because another provider's samples already
// used the name. It is outside the wasmprov_guest_ name space, so no
// guest family can take its name.
const GuestFamiliesSkipped = "wasmprov_provider_guest_metric_families_skipped"

// SampleSource is a provider whose SetMetricsForMachines samples are
// exposed: *runtime.Provider and *registry.Handle are.
type SampleSource interface {
	Name() string
	MetricSamples() []runtime.MetricSample
}

var (
	_ SampleSource = (*runtime.Provider)(nil)
	_ SampleSource = (*registry.Handle)(nil)
)

// GuestCollector exposes the samples providers reported through
// SetMetricsForMachines, each named runtime.MetricNamePrefix(provider) +
// the sample's name, with the sample's labels, help and type.
//
// It is an unchecked collector: its Describe sends nothing, because the
// families are the guests' and change with every SetMetricsForMachines.
// Register it next to the (checked) Collector.
//
// It reads only what the runtime stored after checking a result (abi/SPEC.md
// §4.3), so one provider's families are always consistent; what it guards
// against is two providers whose families share a name — "a-b" and "a_b"
// have the same prefix, and provider "a" with metric "b_x" meets provider
// "a_b" with metric "x". The provider whose name sorts first keeps the
// name; the other's family is skipped, logged once and counted in
// wasmprov_provider_guest_metric_families_skipped, and the scrape succeeds.
type GuestCollector struct {
	sources func() []SampleSource
	logger  *slog.Logger
	skipped *prometheus.Desc

	mu     sync.Mutex
	logged map[string]bool // "provider\x00family" collisions already logged
}

var _ prometheus.Collector = (*GuestCollector)(nil)

// NewGuestCollector returns a GuestCollector over the providers sources
// returns at each scrape. A nil logger discards.
func NewGuestCollector(sources func() []SampleSource, logger *slog.Logger) *GuestCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &GuestCollector{
		sources: sources,
		logger:  logger,
		skipped: prometheus.NewDesc(GuestFamiliesSkipped,
			"Guest metric families of the provider left out of this scrape: another provider's family has the same name.",
			[]string{"provider"}, nil),
		logged: map[string]bool{},
	}
}

// GuestCollector returns a GuestCollector over the providers of the
// registry given to SetRegistry (none before), logging to logger.
func (c *Collector) GuestCollector(logger *slog.Logger) *GuestCollector {
	return NewGuestCollector(func() []SampleSource {
		reg := c.reg.Load()
		if reg == nil {
			return nil
		}
		var out []SampleSource
		for _, n := range reg.Names() {
			if h, err := reg.Get(n); err == nil {
				out = append(out, h)
			}
		}
		return out
	}, logger)
}

// Describe implements prometheus.Collector. It sends nothing: see
// GuestCollector.
func (g *GuestCollector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (g *GuestCollector) Collect(ch chan<- prometheus.Metric) {
	sources := g.sources()
	sort.SliceStable(sources, func(i, j int) bool { return sources[i].Name() < sources[j].Name() })
	owner := map[string]string{} // family name → provider
	for _, src := range sources {
		provider := src.Name()
		prefix := runtime.MetricNamePrefix(provider)
		skipped := 0
		descs := map[string]*prometheus.Desc{}
		for _, s := range src.MetricSamples() {
			name := prefix + s.Name
			if o, ok := owner[name]; ok && o != provider {
				if _, counted := descs[name]; !counted {
					descs[name] = nil
					skipped++
					g.logCollision(provider, o, name)
				}
				continue
			}
			owner[name] = provider
			desc, ok := descs[name]
			if !ok {
				desc = g.desc(provider, name, s)
				descs[name] = desc
			}
			if desc == nil {
				continue // a family already skipped
			}
			m, err := prometheus.NewConstMetric(desc, valueType(s.Type), s.Value, labelValues(s)...)
			if err != nil {
				// The runtime checked the sample; should Prometheus still
				// refuse it, the series is left out rather than the scrape.
				g.logger.Warn("guest metric sample not exposed", "provider", provider, "metric", name, "error", err)
				continue
			}
			ch <- m
		}
		ch <- prometheus.MustNewConstMetric(g.skipped, prometheus.GaugeValue, float64(skipped), provider)
	}
}

func (g *GuestCollector) desc(provider, name string, s runtime.MetricSample) *prometheus.Desc {
	help := s.Help
	if help == "" {
		help = fmt.Sprintf("Reported by provider %s through SetMetricsForMachines.", provider)
	}
	return prometheus.NewDesc(name, help, labelNames(s), nil)
}

// logCollision logs a family skipped for a collision once per provider and
// family: the collision repeats at every scrape until a provider changes.
func (g *GuestCollector) logCollision(provider, owner, family string) {
	key := provider + "\x00" + family
	g.mu.Lock()
	first := !g.logged[key]
	g.logged[key] = true
	g.mu.Unlock()
	if first {
		g.logger.Error("guest metric family skipped: another provider's family has the same name",
			"provider", provider, "metric", family, "kept_for", owner)
	}
}

func valueType(t string) prometheus.ValueType {
	if t == abi.MetricCounter {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

// labelNames is s's label names, sorted; labelValues their values in the
// same order. Samples of one family have the same names (the runtime
// checks), so one desc serves the family.
func labelNames(s runtime.MetricSample) []string {
	names := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func labelValues(s runtime.MetricSample) []string {
	names := labelNames(s)
	vals := make([]string, len(names))
	for i, n := range names {
		vals[i] = s.Labels[n]
	}
	return vals
}
