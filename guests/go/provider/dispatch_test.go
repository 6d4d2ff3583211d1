package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
)

// fakeHost is the host side of one call, in memory: the inputs it offers
// and what the SDK told it.
type fakeHost struct {
	inputs  map[abi.Input][]byte
	asked   []abi.Input
	output  []byte
	reason  string
	message string
	retryMS int64
}

func (h *fakeHost) Input(part abi.Input) ([]byte, error) {
	h.asked = append(h.asked, part)
	b, ok := h.inputs[part]
	if !ok {
		return nil, &HostError{Func: "input", Errno: abi.ErrnoUnavailable, Message: part.String() + " is not an input of this method"}
	}
	return b, nil
}

func (h *fakeHost) Output(b []byte) error { h.output = append([]byte(nil), b...); return nil }

func (h *fakeHost) SetError(reason, message string, retryAfterMillis int64) {
	h.reason, h.message, h.retryMS = reason, message, retryAfterMillis
}

func (h *fakeHost) Log(int32, string, []byte) {}

func (h *fakeHost) Call(fn string, _ []byte) ([]byte, error) {
	return nil, &HostError{Func: fn, Errno: abi.ErrnoNotDeclared}
}

// stub is a Provider whose Delete returns deleteErr; the other methods are
// never reached by these tests.
type stub struct{ deleteErr error }

func (stub) AddDefaults(_ context.Context, s MachineSpec) (MachineSpec, error) { return s, nil }
func (stub) Validate(context.Context, MachineSpec) error                       { return nil }
func (stub) Get(context.Context, *Machine) (*Instance, error)                  { return nil, ErrInstanceNotFound }
func (stub) GetCloudConfig(context.Context, MachineSpec) (string, string, error) {
	return "", "", nil
}
func (stub) Create(context.Context, *Machine, string) (*Instance, error) {
	return nil, errors.New("not in this test")
}
func (s stub) Delete(context.Context, *Machine) error { return s.deleteErr }
func (stub) MachineMetricsLabels(context.Context, *Machine) (map[string]string, error) {
	return nil, nil
}
func (stub) MigrateUID(context.Context, *Machine, string) error { return nil }

const machineJSON = `{"apiVersion":"cluster.k8s.io/v1alpha1","kind":"Machine","metadata":{"name":"m1","uid":"u1"},"spec":{"providerSpec":{"value":{"cloudProviderSpec":{"size":"s"}}}}}`

func deleteHost() *fakeHost {
	return &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachine: []byte(machineJSON)}}
}

func TestDeletionInProgress(t *testing.T) {
	note := DeletionInProgress(3*time.Second, "server %d is deleting", 42)
	if !errors.Is(note, ErrDeletionInProgress) || note.Error() != "deletion in progress: server 42 is deleting" {
		t.Fatalf("DeletionInProgress = %q, Is(ErrDeletionInProgress) = %v", note, errors.Is(note, ErrDeletionInProgress))
	}
	for _, tc := range []struct {
		name     string
		err      error
		declared abi.Capability
		method   abi.Method
		status   abi.Status
		message  string
		retryMS  int64
	}{
		{"async Delete", note, abi.CapLog | abi.CapAsyncDelete, abi.MethodDelete, abi.StatusInProgress,
			"server 42 is deleting", 3000},
		// A provider not declaring async_delete must never emit a status
		// its declaration does not allow: the host would discard it.
		{"Delete without async_delete", note, abi.CapLog, abi.MethodDelete, abi.StatusError,
			"deletion in progress: server 42 is deleting", 3000},
		{"wrapped sentinel", fmt.Errorf("volumes detaching: %w", ErrDeletionInProgress), abi.CapAsyncDelete,
			abi.MethodDelete, abi.StatusInProgress, "volumes detaching: deletion in progress", 0},
		{"wrapped error", fmt.Errorf("outer: %w", note), abi.CapAsyncDelete, abi.MethodDelete, abi.StatusInProgress,
			"outer: deletion in progress: server 42 is deleting", 3000},
		{"plain error still an error", errors.New("boom"), abi.CapAsyncDelete, abi.MethodDelete, abi.StatusError, "boom", 0},
		{"not found is not in progress", ErrInstanceNotFound, abi.CapAsyncDelete, abi.MethodDelete, abi.StatusNotFound,
			"instance not found", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := deleteHost()
			got := DispatchDeclared(context.Background(), h, stub{deleteErr: tc.err}, tc.declared, tc.method)
			if got != tc.status || h.message != tc.message || h.retryMS != tc.retryMS || h.reason != "" {
				t.Fatalf("status %v, set_error(%q, %q, %d); want %v, (\"\", %q, %d)",
					got, h.reason, h.message, h.retryMS, tc.status, tc.message, tc.retryMS)
			}
		})
	}
	// From any other method, even with the bit, it is an error.
	h := &fakeHost{}
	if got := reportError(h, note, abi.MethodCreate, abi.CapAsyncDelete); got != abi.StatusError {
		t.Fatalf("Create returning DeletionInProgress: status %v, want error", got)
	}
}

func TestAsyncDeleteOption(t *testing.T) {
	defer func(r registration) { registered = r }(registered)
	Register(stub{}, AsyncDelete(), Needs(abi.CapHTTP))
	if want := abi.CapLog | abi.CapHTTP | abi.CapAsyncDelete; Capabilities() != want {
		t.Fatalf("Capabilities() = %v, want %v", Capabilities().Names(), want.Names())
	}
	// Dispatch uses what Register declared.
	h := deleteHost()
	registered.p = stub{deleteErr: DeletionInProgress(0, "later")}
	if got := Dispatch(context.Background(), h, registered.p, abi.MethodDelete); got != abi.StatusInProgress {
		t.Fatalf("Dispatch of the registered async provider: %v, want in-progress", got)
	}
}

// metricsStub counts the Machines by their providerSpec's "size".
type metricsStub struct {
	stub
	got []Machine
	err error
}

func (m *metricsStub) SetMetricsForMachines(_ context.Context, machines []Machine) ([]Metric, error) {
	m.got = machines
	if m.err != nil {
		return nil, m.err
	}
	count := map[string]float64{}
	for _, mm := range machines {
		var v struct {
			CloudProviderSpec struct{ Size string } `json:"cloudProviderSpec"`
		}
		_ = json.Unmarshal(mm.Spec.ProviderSpec.Value, &v)
		count[v.CloudProviderSpec.Size]++
	}
	var out []Metric
	for size, n := range count {
		out = append(out, Metric{Name: "machines", Type: abi.MetricGauge, Labels: map[string]string{"size": size}, Value: n})
	}
	return out, nil
}

func TestSetMetricsForMachines(t *testing.T) {
	list := `{"apiVersion":"cluster.k8s.io/v1alpha1","kind":"MachineList","metadata":{"resourceVersion":"7"},"items":[` +
		machineJSON + `,` + machineJSON + `,{"metadata":{"name":"m3"},"spec":{"providerSpec":{"value":{"cloudProviderSpec":{"size":"l"}}}}}]}`
	h := &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachineList: []byte(list)}}
	p := &metricsStub{}
	if got := DispatchDeclared(context.Background(), h, p, abi.CapLog, abi.MethodSetMetricsForMachines); got != abi.StatusOK {
		t.Fatalf("status %v (%s)", got, h.message)
	}
	if len(p.got) != 3 || p.got[0].Name != "m1" || p.got[0].UID != "u1" || p.got[2].Name != "m3" {
		t.Fatalf("provider got %+v", p.got)
	}
	var out abi.MetricSamples
	if err := json.Unmarshal(h.output, &out); err != nil {
		t.Fatalf("output %q: %v", h.output, err)
	}
	byLabel := map[string]float64{}
	for _, s := range out.Metrics {
		if s.Name != "machines" || s.Type != abi.MetricGauge {
			t.Fatalf("sample %+v", s)
		}
		byLabel[s.Labels["size"]] = s.Value
	}
	if !reflect.DeepEqual(byLabel, map[string]float64{"s": 2, "l": 1}) {
		t.Fatalf("samples %v", byLabel)
	}

	// An empty list: an empty sample set, not null.
	h = &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachineList: []byte(`{"kind":"MachineList","items":null}`)}}
	p = &metricsStub{}
	if got := DispatchDeclared(context.Background(), h, p, abi.CapLog, abi.MethodSetMetricsForMachines); got != abi.StatusOK ||
		string(h.output) != `{"metrics":[]}` || len(p.got) != 0 {
		t.Fatalf("empty list: status %v output %q got %d", got, h.output, len(p.got))
	}

	// The provider's error is reported as usual.
	h = &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachineList: []byte(list)}}
	p = &metricsStub{err: errors.New("no")}
	if got := DispatchDeclared(context.Background(), h, p, abi.CapLog, abi.MethodSetMetricsForMachines); got != abi.StatusError || h.message != "no" {
		t.Fatalf("error: status %v message %q", got, h.message)
	}

	// A list that does not decode is an error, not a panic or a silent zero.
	h = &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachineList: []byte(`{"items":[{"metadata":7}]}`)}}
	if got := DispatchDeclared(context.Background(), h, &metricsStub{}, abi.CapLog, abi.MethodSetMetricsForMachines); got != abi.StatusError {
		t.Fatalf("bad list: status %v", got)
	}

	// A provider without MetricsReporter answers OK with no output, and
	// never pulls the list.
	h = &fakeHost{inputs: map[abi.Input][]byte{abi.InputMachineList: []byte(list)}}
	if got := DispatchDeclared(context.Background(), h, stub{}, abi.CapLog, abi.MethodSetMetricsForMachines); got != abi.StatusOK ||
		h.output != nil || len(h.asked) != 0 {
		t.Fatalf("no reporter: status %v output %q asked %v", got, h.output, h.asked)
	}
}
