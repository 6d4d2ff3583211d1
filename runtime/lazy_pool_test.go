package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime"
)

// waitPoolLive waits until p has n live instances.
func waitPoolLive(t *testing.T, p *runtime.Provider, n int64) runtime.PoolStats {
	t.Helper()
	var s runtime.PoolStats
	wait.For(t, fmt.Sprintf("%d live instances", n), func() (bool, string) {
		s = p.PoolStats()
		return s.Live == n, fmt.Sprintf("%+v", s)
	})
	return s
}

// A provider with an IdleTimeout and no Prewarm holds no instance after
// loading; a call starts one, which is closed once idle for the timeout;
// the next call starts another. Close releases an idle instance without
// waiting for the timeout.
func TestLazyProviderStartsAnInstancePerCallAfterIdle(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "examples/fake"),
		runtime.WithPolicy(runtime.Policy{IdleTimeout: runtime.Duration(30 * time.Millisecond)}))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Policy(); got.Prewarm != 0 || time.Duration(got.IdleTimeout) != 30*time.Millisecond {
		t.Fatalf("policy prewarm %d, idle timeout %v; want 0, 30ms", got.Prewarm, time.Duration(got.IdleTimeout))
	}
	if s := p.PoolStats(); s.Live != 0 || s.Created != 0 {
		t.Fatalf("after load: %+v, want no instance", s)
	}
	for round := int64(1); round <= 2; round++ {
		if _, err := p.AddDefaults(ctx, clusterv1alpha1.MachineSpec{}, nil); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if s := p.PoolStats(); s.Created != round {
			t.Fatalf("round %d: %+v, want %d created", round, s, round)
		}
		if s := waitPoolLive(t, p, 0); s.Reaped != round || s.Discarded != 0 {
			t.Fatalf("round %d: %+v, want %d reaped, none discarded", round, s, round)
		}
	}
	if _, err := p.AddDefaults(ctx, clusterv1alpha1.MachineSpec{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := p.PoolStats(); s.Live != 0 || s.Created != 3 {
		t.Fatalf("after Close: %+v, want 3 created, none live", s)
	}
}

// Prewarm still means instances at load with an IdleTimeout; they are
// reaped like any idle instance. Without an IdleTimeout nothing changes:
// one instance is kept from loading and never reaped.
func TestIdleTimeoutReapsPrewarmedInstances(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	wasm := testguest.Build(t, "examples/fake")
	p, err := rt.Load(ctx, wasm, runtime.WithPolicy(runtime.Policy{Prewarm: 2, IdleTimeout: runtime.Duration(20 * time.Millisecond)}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if s := p.PoolStats(); s.Created != 2 || s.Live+s.Reaped != 2 {
		t.Fatalf("after load: %+v, want 2 created (and live unless reaped already)", s)
	}
	if s := waitPoolLive(t, p, 0); s.Reaped != 2 {
		t.Fatalf("%+v, want 2 reaped", s)
	}

	q, err := rt.Load(ctx, wasm, runtime.WithName("eager"))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	if got := q.Policy(); got.Prewarm != 1 || got.IdleTimeout != 0 {
		t.Fatalf("default policy prewarm %d, idle timeout %v; want 1, 0", got.Prewarm, time.Duration(got.IdleTimeout))
	}
	time.Sleep(50 * time.Millisecond)
	if s := q.PoolStats(); s.Live != 1 || s.Reaped != 0 {
		t.Fatalf("without an idle timeout: %+v, want the loading instance kept", s)
	}
}
