package ipam_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/examples/ipam"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// These tests use only what an embedder outside this repository has:
// package hostfuncs, runtime.WithHostFunctions and a policy. testhost
// picks the engine ($WASMPROV_ENGINE), so make test runs them on wazero
// and make test-wasmtime on wasmtime.

func guest(t *testing.T) string { return testguest.Build(t, "examples/ipam/guest") }

// granting is a policy granting the allocator's capability.
func granting(timeout time.Duration) runtime.Policy {
	return runtime.Policy{Capabilities: []string{"log", ipam.Capability}, CallTimeout: runtime.Duration(timeout)}
}

func machine(name string, uid types.UID, allocations int) *clusterv1alpha1.Machine {
	raw, err := json.Marshal(map[string]any{"cloudProvider": "ipam", "cloudProviderSpec": map[string]any{"allocations": allocations}})
	if err != nil {
		panic(err)
	}
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: uid}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

func load(t *testing.T, policy runtime.Policy, fns ...hostfuncs.Function) (*runtime.Provider, error) {
	t.Helper()
	rt := testhost.NewRuntime(t, runtime.WithHostFunctions(fns...))
	return rt.Load(context.Background(), guest(t), runtime.WithName("ipam"), runtime.WithPolicy(policy))
}

func TestGuestGetsItsMachinesAddress(t *testing.T) {
	alloc, err := ipam.New("10.20.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	p, err := load(t, granting(30*time.Second), alloc.HostFunctions()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m1, m2 := machine("m1", "uid-1", 1), machine("m2", "uid-2", 3)
	i1, err := p.Create(ctx, m1, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	i2, err := p.Create(ctx, m2, nil, "") // three allocations, one lease
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"uid-1": "10.20.0.1", "uid-2": "10.20.0.2"}
	if got := alloc.Leases(); !equal(got, want) {
		t.Fatalf("leases %v, want %v", got, want)
	}
	if a := i1.Addresses(); len(a) != 1 || a["10.20.0.1"] != "InternalIP" {
		t.Errorf("m1's instance has addresses %v, want 10.20.0.1", a)
	}
	if a := i2.Addresses(); len(a) != 1 || a["10.20.0.2"] != "InternalIP" {
		t.Errorf("m2's instance has addresses %v, want 10.20.0.2", a)
	}
	got, err := p.Get(ctx, m1, nil)
	if err != nil || got.Addresses()["10.20.0.1"] == "" {
		t.Fatalf("Get(m1) = %v, %v; want the allocated address", got, err)
	}
	if done, err := p.Cleanup(ctx, m1, nil); err != nil || !done {
		t.Fatalf("Cleanup(m1) = %v, %v", done, err)
	}
	if _, err := p.Get(ctx, m1, nil); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Fatalf("Get(m1) after its release: %v, want instance not found", err)
	}
	// The address released is the next one handed out.
	if _, err := p.Create(ctx, machine("m3", "uid-3", 1), nil, ""); err != nil {
		t.Fatal(err)
	}
	if got := alloc.Leases()["uid-3"]; got != "10.20.0.1" {
		t.Errorf("m3 got %s, want the released 10.20.0.1", got)
	}
	// Validate has no Machine: the handler answers UNAVAILABLE, which the
	// guest never asks for; the guest's Validate does not call it.
	if err := p.Validate(ctx, m1.Spec, nil); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestRefusedAtLoadWithoutTheCapability(t *testing.T) {
	alloc, err := ipam.New("10.20.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	for name, policy := range map[string]runtime.Policy{
		// No list grants every built-in capability and no custom one.
		"no capabilities listed": {},
		"built-ins only":         {Capabilities: []string{"log", "http"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, policy, alloc.HostFunctions()...)
			if !errors.Is(err, runtime.ErrInvalidModule) {
				t.Fatalf("load: %v, want ErrInvalidModule", err)
			}
			for _, want := range []string{"example_ipam_v1.allocate", `"ipam.example.com/addresses"`, "add it to the policy's capabilities"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
	t.Run("a runtime without the functions", func(t *testing.T) {
		_, err := load(t, granting(time.Second))
		if err == nil || !strings.Contains(err.Error(), "policy names unknown capability") {
			t.Fatalf("load: %v, want the policy's unknown capability named", err)
		}
		_, err = load(t, runtime.Policy{})
		if !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), `unknown module "example_ipam_v1"`) {
			t.Fatalf("load: %v, want the unknown import module named", err)
		}
	})
}

// blocking returns the allocator's functions with allocate replaced by a
// handler that ignores its context and blocks until the test ends.
func blocking(t *testing.T, alloc *ipam.Allocator, entered chan<- struct{}) []hostfuncs.Function {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fns := alloc.HostFunctions()
	for i := range fns {
		if fns[i].Name == "allocate" {
			fns[i].Handler = func(context.Context, hostfuncs.Request) ([]byte, error) {
				entered <- struct{}{}
				<-release
				return nil, nil
			}
		}
	}
	return fns
}

// A handler that never returns does not hold the call: the guest is
// answered FAILED at the deadline and the call is ErrTimeout, even when
// the guest gets to return its own error before the engine's interrupt
// fires. A lazy provider starts its instance inside the call, after the
// deadline's clock started, which makes that race certain.
func TestHandlerThatBlocksIsInterruptedAtTheDeadline(t *testing.T) {
	for name, policy := range map[string]runtime.Policy{
		"prewarmed": granting(300 * time.Millisecond),
		"lazy":      lazy(granting(300 * time.Millisecond)),
	} {
		t.Run(name, func(t *testing.T) {
			alloc, err := ipam.New("10.20.0.0/24")
			if err != nil {
				t.Fatal(err)
			}
			entered := make(chan struct{}, 1)
			p, err := load(t, policy, blocking(t, alloc, entered)...)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := p.Create(context.Background(), machine("m1", "uid-1", 1), nil, "")
				done <- err
			}()
			<-entered
			// The handler never returns; the call must, at its deadline (the
			// test's own timeout is the bound on "never hangs").
			err = <-done
			if !errors.Is(err, runtime.ErrTimeout) {
				t.Fatalf("Create with a handler that never returns: %v, want ErrTimeout", err)
			}
			// The provider still serves calls: the next one is not stuck behind it.
			if _, err := p.MachineMetricsLabels(context.Background(), machine("m1", "uid-1", 1), nil); err != nil {
				t.Fatalf("a call after the interrupted one: %v", err)
			}
		})
	}
}

// lazy is policy with no instance started before a call needs one.
func lazy(policy runtime.Policy) runtime.Policy {
	policy.IdleTimeout = runtime.Duration(time.Minute)
	return policy
}

func TestUsesPerCallAreCapped(t *testing.T) {
	alloc, err := ipam.New("10.20.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	var uses atomic.Int64
	fns := alloc.HostFunctions()
	for i := range fns {
		h := fns[i].Handler
		fns[i].Handler = func(ctx context.Context, req hostfuncs.Request) ([]byte, error) {
			uses.Add(1)
			return h(ctx, req)
		}
	}
	p, err := load(t, granting(30*time.Second), fns...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(context.Background(), machine("m1", "uid-1", 20), nil, "")
	if err == nil || !strings.Contains(err.Error(), "allocation 9") || !strings.Contains(err.Error(), "the limit is 8 a call") {
		t.Fatalf("Create allocating 20 times: %v, want allocation 9 refused at the limit of 8", err)
	}
	if n := uses.Load(); n != 8 {
		t.Errorf("the handler ran %d times, want the cap of 8", n)
	}
	// The cap is per call: the next call has its own.
	uses.Store(0)
	if _, err := p.Create(context.Background(), machine("m1", "uid-1", 8), nil, ""); err != nil {
		t.Fatalf("a second Create within the cap: %v", err)
	}
	if n := uses.Load(); n != 8 {
		t.Errorf("the second call's handler ran %d times, want 8", n)
	}
}

func TestHandlersOfConcurrentCallsSeeTheirOwnMachine(t *testing.T) {
	alloc, err := ipam.New("10.20.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	policy := granting(30 * time.Second)
	policy.PoolSize = 4
	p, err := load(t, policy, alloc.HostFunctions()...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	addrs := make([]string, 16)
	for i := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := types.UID("uid-" + string(rune('a'+i)))
			inst, err := p.Create(context.Background(), machine(string(uid), uid, 1), nil, "")
			if err != nil {
				t.Error(err)
				return
			}
			for a := range inst.Addresses() {
				addrs[i] = a
			}
			if alloc.Leases()[string(uid)] != addrs[i] {
				t.Errorf("%s got %s, its lease is %s", uid, addrs[i], alloc.Leases()[string(uid)])
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Errorf("address %s handed out twice", a)
		}
		seen[a] = true
	}
}
