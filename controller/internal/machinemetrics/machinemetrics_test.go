package machinemetrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSanitizeLabel(t *testing.T) {
	for in, want := range map[string]string{"size": "size", "a-b.c": "a_b_c", "9x": "_x", "ok_1": "ok_1"} {
		if got := SanitizeLabel(in); got != want {
			t.Errorf("SanitizeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

type rows []Row

func (r rows) Describe(chan<- *prometheus.Desc) {}
func (r rows) Collect(ch chan<- prometheus.Metric) {
	Collect(ch, "machines_total", "help", []string{"provider"}, r)
}

// Rows of the same label set count together; label names are the union,
// a provider label may not override a fixed one, and no machine adds
// more than MaxProviderLabels names.
func TestCollect(t *testing.T) {
	many := map[string]string{}
	for i := range MaxProviderLabels + 10 {
		many[fmt.Sprintf("l%02d", i)] = "x"
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rows{
		{Fixed: map[string]string{"provider": "a"}, Provider: map[string]string{"size": "s", "provider": "forged"}},
		{Fixed: map[string]string{"provider": "a"}, Provider: map[string]string{"size": "s"}},
		{Fixed: map[string]string{"provider": "b"}},
	})
	want := `# HELP machines_total help
# TYPE machines_total gauge
machines_total{provider="a",size="s"} 2
machines_total{provider="b",size=""} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "machines_total"); err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(rows{{Fixed: map[string]string{"provider": "a"}, Provider: many}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mfs[0].Metric[0].Label); n != 1+MaxProviderLabels {
		t.Fatalf("%d labels, want the fixed one and %d of the provider's", n, MaxProviderLabels)
	}
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(rows{})
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP machines_total help\n# TYPE machines_total gauge\nmachines_total{provider=\"\"} 0\n"), "machines_total"); err != nil {
		t.Fatal(err)
	}
}
