package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func TestLoadRejectsInvalidModules(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	cases := []struct {
		name string
		wasm []byte
		want []string
	}{
		{"not-wasm", []byte("#!/bin/sh\necho I am not WebAssembly\n"), []string{"not a valid WebAssembly module"}},
		{"empty", nil, []string{"not a valid WebAssembly module"}},
		{"missing_export", readFixture(t, "missing_export"), []string{`missing export "wasmprov_delete" (func (result i32))`}},
		{"wrong_signature", readFixture(t, "wrong_signature"), []string{`export "wasmprov_validate" has signature (func (param i32) (result i32)), want (func (result i32))`}},
		{"abi_v2", readFixture(t, "abi_v2"), []string{"module implements ABI version 2, this host implements version 1"}},
		{"future_caps", readFixture(t, "future_caps"), []string{"unknown capability bits", "newer ABI"}},
		{"unknown_import", readFixture(t, "unknown_import"), []string{"imports unknown host function wasmprov_v1.launch_missiles"}},
		{"foreign_import", readFixture(t, "foreign_import"), []string{`imports env.syscall from unknown module "env"`}},
		// Found by FuzzInstrument: a function section naming a type index
		// out of range makes wazero v1.12.0's validator panic.
		{"validator_panic", readTestdata(t, "malformed/wazero-validation-panic.wasm"), []string{"not a valid WebAssembly module"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := rt.LoadBytes(ctx, tc.name, tc.wasm)
			if err == nil {
				p.Close(ctx)
				t.Fatal("loaded an invalid module")
			}
			if !errors.Is(err, runtime.ErrInvalidModule) {
				t.Errorf("error does not match ErrInvalidModule: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, `provider "`+tc.name+`"`) {
				t.Errorf("error does not name the provider: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
	// The runtime is unharmed and loads a valid module afterwards.
	p, err := rt.LoadBytes(ctx, "minimal", readFixture(t, "minimal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.SeedProvider(p, nil).Get(newMachine("m", "u", map[string]any{})); err != nil {
		t.Fatal(err)
	}
}

func TestLoadChecksPinnedDigest(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	wasm := readFixture(t, "minimal")
	_, err := rt.LoadBytes(ctx, "pinned", wasm, runtime.WithPolicy(runtime.Policy{SHA256: strings.Repeat("0", 64)}))
	if !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), "does not match the pinned") {
		t.Fatalf("want a digest mismatch, got %v", err)
	}
	p, err := rt.LoadBytes(ctx, "pinned", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.LoadBytes(ctx, "pinned2", wasm, runtime.WithPolicy(runtime.Policy{SHA256: p.SHA256()})); err != nil {
		t.Fatalf("matching digest refused: %v", err)
	}
}

// allMethods calls every method once and returns the errors.
func allMethods(p cloud.Provider, m *clusterv1alpha1.Machine) map[abi.Method]error {
	data := &cloud.MachineCreateDeleteData{}
	errs := map[abi.Method]error{}
	_, errs[abi.MethodAddDefaults] = p.AddDefaults(m.Spec)
	errs[abi.MethodValidate] = p.Validate(m.Spec)
	_, errs[abi.MethodGet] = p.Get(m)
	_, _, errs[abi.MethodGetCloudConfig] = p.GetCloudConfig(m.Spec)
	_, errs[abi.MethodCreate] = p.Create(m, data, "")
	errs[abi.MethodDelete] = p.Delete(m, data)
	_, errs[abi.MethodMachineMetricsLabels] = p.MachineMetricsLabels(m)
	errs[abi.MethodMigrateUID] = p.MigrateUID(m, "new")
	return errs
}

func TestTrapInEveryMethod(t *testing.T) {
	ctx := context.Background()
	logger, logs := testlog.NewText()
	rt := newRuntime(t, runtime.WithLogger(logger))
	p, err := rt.LoadBytes(ctx, "trap", readFixture(t, "trap_all"), runtime.WithPolicy(runtime.Policy{PoolSize: 2}))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m", "u", map[string]any{})
	for round := 0; round < 2; round++ {
		for method, err := range allMethods(cloud.SeedProvider(p, nil), m) {
			if !errors.Is(err, runtime.ErrTrap) || runtime.ErrorClass(err) != runtime.ClassTrap {
				t.Errorf("%s: want a trap error, got %v", method, err)
			}
			if !strings.Contains(err.Error(), `provider "trap": `+method.String()+":") {
				t.Errorf("%s: error does not name provider and method: %v", method, err)
			}
		}
	}
	st := p.PoolStats()
	created, live, inUse, discarded := st.Created, st.Live, st.InUse, st.Discarded
	if discarded != 16 || inUse != 0 || live != 0 || created != 16 {
		t.Fatalf("created=%d live=%d inUse=%d discarded=%d; want every trapped instance discarded", created, live, inUse, discarded)
	}
	if !strings.Contains(logs.String(), "guest trapped; instance discarded") {
		t.Errorf("no log line for the trap:\n%s", logs)
	}
}

func TestPanicInEveryMethod(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "runtime/testdata/panicky"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m", "u", map[string]any{})
	for method, err := range allMethods(cloud.SeedProvider(p, nil), m) {
		if !errors.Is(err, runtime.ErrGuestPanic) || runtime.ErrorClass(err) != runtime.ClassTrap {
			t.Errorf("%s: want a guest panic, got %v", method, err)
			continue
		}
		if !strings.Contains(err.Error(), "panic in "+method.String()) {
			t.Errorf("%s: message does not say where it panicked: %.200s", method, err)
		}
	}
	st := p.PoolStats()
	live, inUse, discarded := st.Live, st.InUse, st.Discarded
	if discarded != 8 || inUse != 0 || live != 0 {
		t.Fatalf("live=%d inUse=%d discarded=%d; a panicked instance must never be reused", live, inUse, discarded)
	}
}

func TestInvalidResults(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	m := newMachine("m", "u", map[string]any{})
	status, err := rt.LoadBytes(ctx, "bad_status", readFixture(t, "bad_status"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cloud.SeedProvider(status, nil).Validate(m.Spec); !errors.Is(err, runtime.ErrBadResult) || !strings.Contains(err.Error(), "unknown status 99") {
		t.Errorf("bad status: %v", err)
	}
	output, err := rt.LoadBytes(ctx, "bad_output", readFixture(t, "bad_output"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.SeedProvider(output, nil).Get(m); !errors.Is(err, runtime.ErrBadResult) || !strings.Contains(err.Error(), "Get returned status OK with an output that is not an Instance document") {
		t.Errorf("bad output: %v", err)
	}
}

func TestInvalidProviderSpecIsTerminalAndNeverReachesTheGuest(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	// Every method of this guest traps: a terminal error (not a trap) proves
	// the host refused the Machine before calling the guest.
	p, err := rt.LoadBytes(ctx, "trap", readFixture(t, "trap_all"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m", "u", map[string]any{})
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(`{"cloudProvider": "fake", oops}`)}
	for method, err := range allMethods(cloud.SeedProvider(p, nil), m) {
		ok, reason, msg := cloudprovidererrors.IsTerminalError(err)
		if !ok || reason != clusterv1alpha1.InvalidConfigurationMachineError || !strings.Contains(msg, "not valid JSON") {
			t.Errorf("%s: want terminal InvalidConfiguration, got %v", method, err)
		}
		if !strings.Contains(err.Error(), `provider "trap": `+method.String()) {
			t.Errorf("%s: error does not name provider and method: %v", method, err)
		}
	}
	if discarded := p.PoolStats().Discarded; discarded != 0 {
		t.Fatalf("the guest ran: %d instances discarded", discarded)
	}
}

func TestPolicyCallTimeoutStopsRunawayGuest(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.LoadBytes(ctx, "loop", readFixture(t, "loop"),
		runtime.WithPolicy(runtime.Policy{CallTimeout: runtime.Duration(150 * time.Millisecond)}))
	if err != nil {
		t.Fatal(err)
	}
	var _ cloud.Provider = cloud.SeedProvider(p, nil) // the seed interface has no context: the policy's timeout applies
	start := time.Now()
	err = cloud.SeedProvider(p, nil).Validate(newMachine("m", "u", map[string]any{}).Spec)
	if !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Fatalf("stopped after %s", d)
	}
}

func TestClosedProviderRefusesCalls(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.LoadBytes(ctx, "minimal", readFixture(t, "minimal"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.SeedProvider(p, nil).Get(newMachine("m", "u", map[string]any{})); !errors.Is(err, runtime.ErrProviderClosed) {
		t.Fatalf("want ErrProviderClosed, got %v", err)
	}
	if live := p.PoolStats().Live; live != 0 {
		t.Fatalf("%d instances still live after Close", live)
	}
}

// TestCallTimeoutTimerIsReusedWithoutFalseAlarms makes many short calls
// under a short policy timeout: each instance re-arms one timer per call,
// and a firing meant for an earlier call must never interrupt a later one.
// A call that really ran past the timeout (a loaded machine, the race
// detector) may be interrupted; one that did not must not be.
func TestCallTimeoutTimerIsReusedWithoutFalseAlarms(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	const timeout = 5 * time.Millisecond
	p, err := rt.LoadBytes(ctx, "minimal", readFixture(t, "minimal"),
		runtime.WithPolicy(runtime.Policy{CallTimeout: runtime.Duration(timeout), PoolSize: 1}))
	if err != nil {
		t.Fatal(err)
	}
	spec := newMachine("m", "u", map[string]any{}).Spec
	deadline := time.Now().Add(300 * time.Millisecond)
	n, slow := 0, 0
	for time.Now().Before(deadline) {
		start := time.Now()
		err := cloud.SeedProvider(p, nil).Validate(spec)
		took := time.Since(start)
		switch {
		case err == nil:
		case errors.Is(err, runtime.ErrTimeout) && took >= timeout:
			slow++ // a real timeout: the call was descheduled that long
		default:
			t.Fatalf("call %d (%s): %v", n, took, err)
		}
		n++
	}
	if discarded := p.PoolStats().Discarded; discarded != int64(slow) {
		t.Fatalf("%d instances discarded, %d calls really timed out", discarded, slow)
	}
	t.Logf("%d calls, %d really slow, no false alarm", n, slow)
}

// TestInstancesAreRecycledAfterTheirCallBudget checks MaxCallsPerInstance:
// a healthy instance is retired after its budget (bounding a guest's memory
// growth) and that is not counted as a discard.
func TestInstancesAreRecycledAfterTheirCallBudget(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.LoadBytes(ctx, "minimal", readFixture(t, "minimal"),
		runtime.WithPolicy(runtime.Policy{MaxCallsPerInstance: 3, PoolSize: 1}))
	if err != nil {
		t.Fatal(err)
	}
	spec := newMachine("m", "u", map[string]any{}).Spec
	for i := 0; i < 10; i++ {
		if err := cloud.SeedProvider(p, nil).Validate(spec); err != nil {
			t.Fatal(err)
		}
	}
	st := p.PoolStats()
	created, live, discarded := st.Created, st.Live, st.Discarded
	if created != 4 || live != 1 || discarded != 0 {
		t.Fatalf("created=%d live=%d discarded=%d; want 4 instances for 10 calls at 3 calls each, none discarded", created, live, discarded)
	}
}
