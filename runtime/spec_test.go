package runtime_test

// The SPEC-conformance table: one row per normative sentence of
// abi/SPEC.md that a host can check, each naming its section, driving the
// hand-written probe guest testdata/abi/spec_probe.wat (or a fixture that
// breaks one rule of §2–§3). An edit of either side — a SPEC sentence or
// the host's behaviour — breaks a row; TestSpecSectionsExist keeps every
// section a row names a heading of SPEC.md. The rows are in
// spec_rows_test.go.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime"
)

// specRow is one checked sentence of the SPEC.
type specRow struct {
	section string // "§5.3": a heading of abi/SPEC.md
	rule    string // the sentence, short
	check   func(t *testing.T, h *specHost)
}

// specHost is the runtime the rows share, and the probe loaded under the
// two policies the rows need.
type specHost struct {
	ctx context.Context
	rt  *runtime.Runtime
	// all grants every capability the probe declares, with http_do
	// allowed to api.example.com only; none grants nothing.
	all, none *runtime.Provider
}

// The probe's scenarios (see the comments in spec_probe.wat).
const (
	scNoOutput = iota
	scEmptyOutput
	scInstance
	scNotJSON
	scRunningNoID
	scUnknownStatus
	scCreatingNoID
	scTerminalNoSetError
	scTerminalBogus
	scTerminalValid
	scTerminalLowercase
	scNotFound
	scRetry1500
	scPanic
	scStatus5
	scStatusMinus1
	scTrap
	scProcExit
	scInputParts
	scPending
	scFitClears
	scErrnoExplained
	scTakeRefusedKeeps
	scRanges
	scNotDeclared
	scUnavailable
	scOutsideCall
	scMachineUpdate
	scHTTPDenied
	scConfigVar
	scOutputTwice
	scDefaultsPartial
	scCloudConfig
	scLogLevel
	scRetryDay
	scLabels
	scErrorNoSetError
	scPendingSurvivesOutput
	scOutputTooLarge
	scNoStatus
)

func newSpecHost(t *testing.T) *specHost {
	// The logger records warnings and up: the log_level input says 4.
	rt := newRuntime(t, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	h := &specHost{ctx: context.Background(), rt: rt}
	h.all = h.load(t, "spec-all", runtime.Policy{PoolSize: 1, AllowedHosts: []string{"api.example.com"}})
	h.none = h.load(t, "spec-none", runtime.Policy{PoolSize: 1, Capabilities: []string{}})
	return h
}

func (h *specHost) load(t *testing.T, name string, policy runtime.Policy) *runtime.Provider {
	t.Helper()
	p, err := h.rt.LoadBytes(h.ctx, name, readFixture(t, "spec_probe"), runtime.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(h.ctx) })
	return p
}

// loadFixture loads a committed fixture that should be refused, and
// returns the error.
func (h *specHost) loadFixture(t *testing.T, name string) error {
	t.Helper()
	p, err := h.rt.LoadBytes(h.ctx, name, readFixture(t, name))
	if err == nil {
		p.Close(h.ctx)
		t.Fatalf("%s loaded; the SPEC says it must be refused", name)
	}
	return err
}

// machine is the Machine of scenario n: its provider spec is the number.
func probeMachine(n int) *clusterv1alpha1.Machine {
	m := newMachine("spec-probe", "uid-spec", n)
	m.Spec.Name = "spec-probe"
	return m
}

// call runs method m of p with scenario n and returns the method's result
// (nil for methods without one) and error. data is Create's and Delete's.
func (h *specHost) call(p *runtime.Provider, m abi.Method, n int, data *provider.Data) (any, error) {
	cp, machine := p, probeMachine(n)
	switch m {
	case abi.MethodAddDefaults:
		return cp.AddDefaults(h.ctx, machine.Spec, nil)
	case abi.MethodValidate:
		return nil, cp.Validate(h.ctx, machine.Spec, nil)
	case abi.MethodGet:
		return cp.Get(h.ctx, machine, nil)
	case abi.MethodGetCloudConfig:
		cfg, name, err := cp.GetCloudConfig(h.ctx, machine.Spec, nil)
		return [2]string{cfg, name}, err
	case abi.MethodCreate:
		return cp.Create(h.ctx, machine, data, "#cloud-config")
	case abi.MethodDelete:
		return nil, cp.Delete(h.ctx, machine, data)
	case abi.MethodMachineMetricsLabels:
		return cp.MachineMetricsLabels(h.ctx, machine, nil)
	case abi.MethodMigrateUID:
		return nil, cp.MigrateUID(h.ctx, machine, "uid-new", nil)
	}
	panic("unknown method " + m.String())
}

// report runs a reporting scenario: it must end as an ERROR whose message
// is the report, which is returned.
func (h *specHost) report(t *testing.T, p *runtime.Provider, m abi.Method, n int, data *provider.Data) string {
	t.Helper()
	_, err := h.call(p, m, n, data)
	var ce *runtime.CallError
	if !errors.As(err, &ce) || ce.Class != runtime.ClassTransient {
		t.Fatalf("%s of scenario %d: want the ERROR carrying the report, got %v", m, n, err)
	}
	return strings.TrimSpace(ce.Err.Error())
}

// discarded runs f and returns how many instances of p it discarded.
func discarded(p *runtime.Provider, f func()) int64 {
	before := p.PoolStats().Discarded
	f()
	return p.PoolStats().Discarded - before
}

func TestSpecConformance(t *testing.T) {
	h := newSpecHost(t)
	seen := map[string]bool{}
	for _, r := range specRows() {
		name := r.section + " " + r.rule
		if seen[name] {
			t.Errorf("two rows named %q", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) { r.check(t, h) })
	}
	if len(seen) < 30 {
		t.Errorf("%d rows: the table should cover every checkable sentence of §4–§8", len(seen))
	}
}

// specHeading matches a numbered heading of SPEC.md: "## 4. Method
// exports…", "### 4.1 Inputs…".
var specHeading = regexp.MustCompile(`^#{2,6} (\d+(?:\.\d+)*)\.? `)

// TestSpecSectionsExist: every section a row names is a heading of
// abi/SPEC.md, and every numbered section of §4–§8 has a row.
func TestSpecSectionsExist(t *testing.T) {
	f, err := os.Open("../abi/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	headings := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := specHeading.FindStringSubmatch(sc.Text()); m != nil {
			headings["§"+m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(headings) < 10 {
		t.Fatalf("found only %d numbered headings in SPEC.md: %v", len(headings), headings)
	}
	named := map[string]bool{}
	for _, r := range specRows() {
		if !strings.HasPrefix(r.section, "§") || !headings[r.section] {
			t.Errorf("row %q names %s, which is not a heading of abi/SPEC.md", r.rule, r.section)
		}
		named[r.section] = true
	}
	for h := range headings {
		major, _, _ := strings.Cut(strings.TrimPrefix(h, "§"), ".")
		if n, _ := strconv.Atoi(major); n < 4 || n > 8 || named[h] || hasSubsection(headings, h) {
			continue
		}
		// §4.2 is what the controller relies on: conformance checks it,
		// not the host.
		if h != "§4.2" {
			t.Errorf("SPEC section %s has no row", h)
		}
	}
}

// hasSubsection reports whether h ("§6") has a numbered subsection ("§6.1").
func hasSubsection(headings map[string]bool, h string) bool {
	for o := range headings {
		if strings.HasPrefix(o, h+".") {
			return true
		}
	}
	return false
}
