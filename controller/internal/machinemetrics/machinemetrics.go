// Package machinemetrics exports a count of machines by label set, as
// machine-controller's machine_controller_machines_total: one series per
// distinct set of labels, the labels being fixed ones and those a
// provider's MachineMetricsLabels return. The Machine controller and the
// WasmMachine reconciler export theirs with it.
package machinemetrics

import (
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxProviderLabels caps how many of a provider's labels a machine
// contributes: a provider is untrusted, and every distinct label name
// widens the family.
const MaxProviderLabels = 16

// Row is one machine: its fixed labels, and its provider's labels.
type Row struct {
	Fixed    map[string]string
	Provider map[string]string
}

// Collect sends one gauge family name: the count of rows per distinct
// label set. Label names are the union over all rows (missing ones
// empty), so the family stays consistent for Prometheus; a provider label
// that names a fixed one is dropped. With no rows, it reports 0 for the
// empty label set, as machine-controller does.
func Collect(ch chan<- prometheus.Metric, name, help string, fixed []string, rows []Row) {
	names := map[string]struct{}{}
	for _, f := range fixed {
		names[f] = struct{}{}
	}
	full := make([]map[string]string, 0, len(rows))
	for _, row := range rows {
		m := map[string]string{}
		for k, v := range row.Fixed {
			m[k] = v
		}
		added := 0
		for _, k := range sortedKeys(row.Provider) {
			s := SanitizeLabel(k)
			if _, taken := m[s]; taken || s == "" || isFixed(fixed, s) || added == MaxProviderLabels {
				continue
			}
			m[s] = row.Provider[k]
			names[s] = struct{}{}
			added++
		}
		full = append(full, m)
	}
	labelNames := sortedKeys(names)
	desc := prometheus.NewDesc(name, help, labelNames, nil)
	counts := map[string]float64{}
	values := map[string][]string{}
	for _, row := range full {
		vals := make([]string, len(labelNames))
		for i, n := range labelNames {
			vals[i] = row[n]
		}
		k := strings.Join(vals, "\x00")
		counts[k]++
		values[k] = vals
	}
	if len(full) == 0 {
		values[""] = make([]string, len(labelNames))
		counts[""] = 0
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, n, values[k]...)
	}
}

func isFixed(fixed []string, s string) bool {
	for _, f := range fixed {
		if f == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SanitizeLabel makes a provider's label name a valid Prometheus one.
func SanitizeLabel(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Labels caches each machine's provider labels by generation: asked of
// the provider once per generation, during reconcile, so that a scrape
// never calls into a provider. Safe for concurrent use.
type Labels struct {
	mu sync.Mutex
	m  map[string]labelsAt
}

type labelsAt struct {
	generation int64
	labels     map[string]string
}

// Observe calls ask for the machine key's labels unless those of its
// generation are cached; ask's error is returned and nothing is cached.
func (l *Labels) Observe(key string, generation int64, ask func() (map[string]string, error)) error {
	l.mu.Lock()
	cached, ok := l.m[key]
	l.mu.Unlock()
	if ok && cached.generation == generation {
		return nil
	}
	labels, err := ask()
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]labelsAt{}
	}
	l.m[key] = labelsAt{generation: generation, labels: labels}
	l.mu.Unlock()
	return nil
}

// Get returns the machine key's cached labels (nil if none).
func (l *Labels) Get(key string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key].labels
}

// Forget drops the machine key's labels.
func (l *Labels) Forget(key string) {
	l.mu.Lock()
	delete(l.m, key)
	l.mu.Unlock()
}
