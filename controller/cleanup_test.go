package controller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"

	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

// cleanerCloud is a memCloud with machine-controller's current deletion:
// Cleanup answers from script (then the last answer forever), and Get is
// counted while the Machine is being deleted: the controller deletes
// through Cleanup alone.
type cleanerCloud struct {
	*memCloud

	mu     sync.Mutex
	script []bool
	err    error // returned (once) by the next Cleanup
	calls  []cleanupCall
	seed   int // Get on a deleting Machine
	// now stamps the calls (nil: time.Now); set before the controller
	// starts.
	now func() time.Time
	// onDone runs when Cleanup answers done, with the call's Machine and
	// Data; set before the controller starts.
	onDone func(*clusterv1alpha1.Machine, *provider.Data) error
}

type cleanupCall struct {
	at           time.Time
	hadFinalizer bool
}

func (p *cleanerCloud) Cleanup(_ context.Context, m *clusterv1alpha1.Machine, data *provider.Data) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	p.calls = append(p.calls, cleanupCall{now(), slices.Contains(m.Finalizers, FinalizerDeleteInstance)})
	if data == nil || data.Update == nil {
		return false, errors.New("no updater")
	}
	if err := p.err; err != nil {
		p.err = nil
		return false, err
	}
	done := p.script[min(len(p.calls)-1, len(p.script)-1)]
	if done {
		p.memCloud.mu.Lock()
		delete(p.memCloud.servers, m.UID)
		p.memCloud.mu.Unlock()
		if p.onDone != nil {
			if err := p.onDone(m, data); err != nil {
				return false, err
			}
		}
	}
	return done, nil
}

func (p *cleanerCloud) Get(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data) (instance.Instance, error) {
	p.countSeed(m)
	return p.memCloud.Get(ctx, m, data)
}

func (p *cleanerCloud) countSeed(m *clusterv1alpha1.Machine) {
	if m.DeletionTimestamp != nil {
		p.mu.Lock()
		p.seed++
		p.mu.Unlock()
	}
}

func (p *cleanerCloud) snapshot() ([]cleanupCall, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls), p.seed
}

func newCleanerHarness(t *testing.T, script []bool, mutate func(*Options)) (*harness, *cleanerCloud) {
	t.Helper()
	var cc *cleanerCloud
	h := newHarness(t, func(o *Options) {
		if mutate != nil {
			mutate(o)
		}
	})
	cc = &cleanerCloud{memCloud: h.cloud, script: script}
	h.ctrl.opts.Providers = NewMapSource(map[string]provider.Interface{"mem": cc})
	return h, cc
}

func provision(t *testing.T, h *harness, name string) {
	t.Helper()
	h.machines.Create(machine(name, "mem", `{"size":"s"}`))
	eventually(t, name+" provisioned", func() bool {
		m, ok := h.machines.get("default", name)
		return ok && m.Spec.ProviderID != nil
	})
}

func TestCleanupLoopRemovesFinalizerOnlyWhenDone(t *testing.T) {
	h, cc := newCleanerHarness(t, []bool{false, false, true}, nil)
	h.start()
	provision(t, h, "doomed")
	h.machines.Delete("default", "doomed")
	eventually(t, "machine gone", func() bool {
		_, ok := h.machines.get("default", "doomed")
		return !ok
	})
	calls, seed := cc.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d Cleanup calls, want 3 (in progress, in progress, done)", len(calls))
	}
	for i, c := range calls {
		if !c.hadFinalizer {
			t.Errorf("Cleanup call %d saw a Machine without the finalizer: it was removed before done", i+1)
		}
	}
	if seed != 0 {
		t.Errorf("%d Get calls on the deleting Machine, want 0 (the controller deletes through Cleanup alone)", seed)
	}
	if got := testutil.ToFloat64(h.ctrl.metrics.deletes); got != 1 {
		t.Errorf("instance deletes = %v, want 1 (one finished deletion)", got)
	}
}

func TestCleanupErrorIsRetried(t *testing.T) {
	h, cc := newCleanerHarness(t, []bool{true}, nil)
	h.start()
	provision(t, h, "flaky")
	cc.mu.Lock()
	cc.err = errors.New("503 from the cloud API")
	cc.mu.Unlock()
	h.machines.Delete("default", "flaky")
	eventually(t, "machine gone", func() bool {
		_, ok := h.machines.get("default", "flaky")
		return !ok
	})
	if calls, _ := cc.snapshot(); len(calls) != 2 {
		t.Fatalf("%d Cleanup calls, want 2 (an error, then done)", len(calls))
	}
	if got := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")); got != 1 {
		t.Fatalf("error reconciles = %v, want 1", got)
	}
}

func TestCleanupInProgressForeverKeepsFinalizerAndBacksOff(t *testing.T) {
	const poll, max = 10 * time.Second, 40 * time.Second
	clk := testingclock.NewFakeClock(time.Now())
	h, cc := newCleanerHarness(t, []bool{false}, func(o *Options) {
		o.PollInterval, o.MaxDeletePollInterval = poll, max
		o.Clock = clk
	})
	cc.now = clk.Now
	h.start()
	// Provisioning's own requeue (PollInterval after Create) waits on the
	// fake clock like the deletion's: nothing below comes by itself.
	provision(t, h, "stuck")
	h.machines.Delete("default", "stuck")
	// The first call comes of the deletion itself, with the clock where
	// provisioning left it: its requeue, due PollInterval after Create,
	// falls on the deletion's first retry.
	eventually(t, "the first Cleanup call", func() bool {
		calls, _ := cc.snapshot()
		return len(calls) >= 1
	})
	// Then time moves a second per poll of the condition: the Cleanup
	// calls come when the clock reaches each backoff, never sooner.
	eventually(t, "7 Cleanup calls", func() bool {
		if calls, _ := cc.snapshot(); len(calls) >= 7 {
			return true
		}
		clk.Step(time.Second)
		return false
	})
	calls, seed := cc.snapshot()
	// The waits double from PollInterval and stay at the cap: 10, 20, 40,
	// 40, 40, 40 s. A fixed poll (or none) would come sooner.
	want := []time.Duration{poll, 2 * poll, max, max, max, max}
	for i, w := range want {
		if gap := calls[i+1].at.Sub(calls[i].at); gap < w {
			t.Errorf("wait before Cleanup call %d: %v, want at least %v", i+2, gap, w)
		}
	}
	// And the cap holds: uncapped, the waits would go on doubling (80,
	// 160, 320 s); the slack is for the steps taken while a reconcile ran.
	for i := 3; i < len(calls)-1; i++ {
		if gap := calls[i+1].at.Sub(calls[i].at); gap >= 2*max {
			t.Errorf("wait before Cleanup call %d: %v, past the %v cap", i+2, gap, max)
		}
	}
	m, ok := h.machines.get("default", "stuck")
	if !ok || !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
		t.Fatalf("finalizer gone while deletion is still in progress: present %v, %v", ok, m)
	}
	if seed != 0 {
		t.Errorf("%d Get calls on the deleting Machine, want 0", seed)
	}
	if got := testutil.ToFloat64(h.ctrl.metrics.deletes); got != 0 {
		t.Errorf("instance deletes = %v, want 0", got)
	}
	// Once the guest finishes, the finalizer goes.
	cc.mu.Lock()
	cc.script = []bool{true}
	cc.calls = cc.calls[:0]
	cc.mu.Unlock()
	eventually(t, "machine gone once done", func() bool {
		_, ok := h.machines.get("default", "stuck")
		clk.Step(time.Second)
		return !ok
	})
}

// A provider that writes the Machine during Cleanup, as machine-controller's
// do when they remove their own finalizer: the controller's finalizer
// removal then starts from the Machine the provider wrote, so no write is
// refused. It used to write from the copy read before the call: one 409
// and a re-read for every Machine deleted (docs/SCALE.md, at N = 1000).
func TestCleanupRemovesFinalizerFromTheProvidersWrite(t *testing.T) {
	h, cc := newCleanerHarness(t, []bool{true}, nil)
	cc.onDone = func(m *clusterv1alpha1.Machine, data *provider.Data) error {
		_, err := data.Update(m, func(m *clusterv1alpha1.Machine) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations["mem.example/deleted"] = "true"
		})
		return err
	}
	h.start()
	provision(t, h, "tidy")
	before := h.machines.conflictCount()
	h.machines.Delete("default", "tidy")
	eventually(t, "machine gone", func() bool {
		_, ok := h.machines.get("default", "tidy")
		return !ok
	})
	// A second Cleanup may come from the provider's own write's event, on
	// a copy cached before the Machine went: that one finds it gone.
	if n := h.machines.conflictCount() - before; n != 0 {
		t.Errorf("%d writes refused as conflicts during the deletion, want 0", n)
	}
	if got := testutil.ToFloat64(h.ctrl.metrics.deletes); got != 1 {
		t.Errorf("instance deletes = %v, want 1", got)
	}
}

// A reconcile of a stale cached copy, whose Machine the API server has
// already deleted: the finalizer it would remove is gone with the Machine.
// That is the end of the deletion, not a failed reconcile (it used to be
// one, retried with backoff, and counted in reconciles_total{result="error"}).
func TestCleanupOfAMachineAlreadyGoneSucceeds(t *testing.T) {
	h, cc := newCleanerHarness(t, []bool{true}, nil)
	cc.onDone = func(m *clusterv1alpha1.Machine, _ *provider.Data) error {
		h.machines.purge(m.Namespace, m.Name)
		return nil
	}
	h.start()
	provision(t, h, "stale")
	ended := func() float64 {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("success")) +
			testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error"))
	}
	before := ended()
	h.machines.Delete("default", "stale")
	eventually(t, "the deletion's reconcile ended", func() bool {
		calls, _ := cc.snapshot()
		return len(calls) >= 1 && ended() > before
	})
	if got := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")); got != 0 {
		t.Errorf("error reconciles = %v, want 0", got)
	}
	// More Cleanup calls may come (the stale copy stays in the cache, and
	// provisioning's requeue may still be due); each ends the same way.
	if got := testutil.ToFloat64(h.ctrl.metrics.deletes); got != 0 {
		t.Errorf("instance deletes = %v, want 0 (the reconcile that removed the finalizer counts it)", got)
	}
}
