package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/wasmprov/wasmprov/cloud"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/fake/fakeprovider"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/native"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// probe is the fake provider with three methods that exercise the adapter:
// Validate calls a host function it did not declare and reports what kind
// of error it got, Get logs and reads its input, Delete panics.
type probe struct{ fakeprovider.Provider }

func (probe) Validate(ctx context.Context, _ provider.MachineSpec) error {
	_, err := provider.DoHTTP(ctx, provider.HTTPRequest{Method: "GET", URL: "https://example.invalid/"})
	var he *provider.HostError
	if !errors.As(err, &he) {
		return fmt.Errorf("not a *provider.HostError: %T %v", err, err)
	}
	return fmt.Errorf("func=%s errno=%d message=%q", he.Func, he.Errno, he.Message)
}

func (p probe) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	provider.Logger(ctx).Info("probe get", "machine", m.Name)
	return p.Provider.Get(ctx, m)
}

func (probe) Delete(context.Context, *provider.Machine) error { panic("probe delete") }

func machine(name string) *clusterv1alpha1.Machine {
	raw, _ := json.Marshal(map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{}})
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name)}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

func TestLoadRunsSDKProviderThroughHost(t *testing.T) {
	logs := testlog.NewCapture()
	rt := testhost.NewRuntime(t, runtime.WithLogger(slog.New(logs)))
	p, err := native.Load(rt, "probe", probe{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "probe" || p.Declared() != abi.CapLog || p.Granted() != abi.CapLog {
		t.Errorf("name %q declared %v granted %v, want probe, log, log", p.Name(), p.Declared(), p.Granted())
	}

	// Input reaches the provider and its result is decoded as a module's.
	inst, err := cloud.SeedProvider(p, nil).Get(machine("m1"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Name() != "m1" || inst.ID() != "uid-m1" {
		t.Errorf("Get: name %q id %q, want m1 uid-m1", inst.Name(), inst.ID())
	}
	if recs := logs.Records("probe", "probe get"); len(recs) != 1 {
		t.Errorf("the provider's log record reached the runtime's logger %d times, want 1: %v", len(recs), logs.All())
	}

	// A refused host function is the SDK's *provider.HostError, with the
	// errno and message a wasm guest reads.
	err = cloud.SeedProvider(p, nil).Validate(machine("m1").Spec)
	want := fmt.Sprintf(`func=%s errno=%d message=%q`, abi.ImportHTTP, abi.ErrnoNotDeclared, "capability not declared or not granted")
	if got := errors.Unwrap(err); got == nil || got.Error() != want {
		t.Errorf("Validate: %v, want the provider's report %s", err, want)
	}
	if c := runtime.ErrorClass(err); c != runtime.ClassTransient {
		t.Errorf("Validate: class %q, want %q", c, runtime.ClassTransient)
	}

	// A panic is the SDK's panic status: ErrGuestPanic, class trap.
	err = cloud.SeedProvider(p, nil).Delete(machine("m1"), nil)
	if !errors.Is(err, runtime.ErrGuestPanic) || runtime.ErrorClass(err) != runtime.ClassTrap {
		t.Errorf("Delete: %v (class %q), want ErrGuestPanic of class trap", err, runtime.ErrorClass(err))
	}
}

func TestLoadFuncRefusesNilFunc(t *testing.T) {
	rt := testhost.NewRuntime(t)
	if p, err := rt.LoadFunc("nil", 0, nil, runtime.WithName("renamed")); err == nil || p != nil {
		t.Fatalf("LoadFunc(nil) = %v, %v; want an error", p, err)
	} else if want := `provider "renamed": no NativeFunc`; err.Error() != want {
		t.Errorf("LoadFunc(nil): %q, want %q", err, want)
	}
}

// slowDelete answers Delete in progress twice, then done.
type slowDelete struct {
	fakeprovider.Provider
	calls *int
}

func (s slowDelete) Delete(context.Context, *provider.Machine) error {
	if *s.calls++; *s.calls < 3 {
		return provider.DeletionInProgress(0, "call %d", *s.calls)
	}
	return nil
}

// The declaration passed to Load decides the SDK's mapping, as a module's
// would: IN_PROGRESS only with async_delete, a retriable error without.
func TestLoadMapsDeletionInProgressByDeclaration(t *testing.T) {
	rt := testhost.NewRuntime(t)
	n := 0
	p, err := native.Load(rt, "async", slowDelete{calls: &n}, abi.CapAsyncDelete)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true} {
		if done, err := p.Cleanup(context.Background(), machine("m"), nil); done != want || err != nil {
			t.Fatalf("async Cleanup call %d = (%v, %v), want (%v, nil)", i+1, done, err, want)
		}
	}
	n = 0
	old, err := native.Load(rt, "sync", slowDelete{calls: &n}, 0)
	if err != nil {
		t.Fatal(err)
	}
	done, err := old.Cleanup(context.Background(), machine("m"), nil)
	if done || err == nil || errors.Is(err, runtime.ErrDeletionInProgress) || runtime.ErrorClass(err) != runtime.ClassTransient {
		t.Fatalf("Cleanup without async_delete = (%v, %v), want a transient error that is not IN_PROGRESS", done, err)
	}
}
