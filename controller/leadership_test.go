package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// leadReplica is one controller competing for a Lease, with what its
// OnLeadershipChange saw.
type leadReplica struct {
	c      *Controller
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	calls  []bool
	// mismatch: IsLeader disagreed with the value a call carried.
	mismatch bool
}

func (r *leadReplica) seen() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func startLeadReplica(t *testing.T, kube KubeClient, le LeaderElection, id string) *leadReplica {
	t.Helper()
	r := &leadReplica{done: make(chan error, 1)}
	var c *Controller
	c, err := New(Options{Machines: newFakeMachines(), Kube: kube, Logger: quietLogger(),
		Providers: NewMapSource(map[string]provider.Interface{"mem": newMemCloud()}), Registerer: prometheus.NewRegistry(),
		OnLeadershipChange: func(leading bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls = append(r.calls, leading)
			if c.IsLeader() != leading {
				r.mismatch = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	if c.IsLeader() {
		t.Fatal("IsLeader before the manager started")
	}
	le.Identity = id
	mgr := newManager(t, kube, &le)
	if err := c.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop", id)
		}
	})
	return r
}

// newManager is NewManager with a REST config that points nowhere: the
// manager's own cache and client are never used, and the Lease goes
// through kube.
func newManager(t *testing.T, kube KubeClient, le *LeaderElection) manager.Manager {
	t.Helper()
	mgr, err := NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, kube, le, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func leaseHolder(kube KubeClient, name string) string {
	l, err := kube.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaseGets counts the Lease reads recorded by a clientset.
func leaseGets(kube *kubefake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
			n++
		}
	}
	return n
}

// OnLeadershipChange and IsLeader follow the Lease: the leader is told
// true, a standby nothing; a graceful stop tells the leader false and the
// next one true.
func TestLeadershipChangeHandover(t *testing.T) {
	kube := kubefake.New()
	le := LeaderElection{Namespace: "kube-system", Name: "obs", LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	a := startLeadReplica(t, kube, le, "a")
	eventually(t, "a leads", func() bool { return leaseHolder(kube, "obs") == "a" && a.c.IsLeader() })
	bKube := kube.Replica()
	b := startLeadReplica(t, bKube, le, "b")
	// b tries a few times (RetryPeriod 100ms).
	eventually(t, "b tried for the Lease 3 times", func() bool { return leaseGets(bKube) >= 3 })
	if b.c.IsLeader() || len(b.seen()) != 0 {
		t.Fatalf("standby b: IsLeader %v, calls %v", b.c.IsLeader(), b.seen())
	}
	if got := a.seen(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("leader a calls %v, want [true]", got)
	}

	a.cancel()
	if err := <-a.done; err != nil {
		t.Fatalf("a: %v", err)
	}
	a.done <- nil // for the cleanup
	// The manager returned after its runnables did: Run had returned.
	if a.c.IsLeader() {
		t.Fatal("a still IsLeader after its manager stopped")
	}
	if got := a.seen(); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("a calls %v, want [true false]", got)
	}
	eventually(t, "b leads", func() bool { return b.c.IsLeader() && leaseHolder(kube, "obs") == "b" })
	if got := b.seen(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("b calls %v, want [true]", got)
	}
	if a.mismatch || b.mismatch {
		t.Fatal("IsLeader disagreed with the value OnLeadershipChange was given")
	}
}

// A leader that cannot renew its Lease (every update refused, as when the
// API server is unreachable) ends: the manager returns "leader election
// lost" at once, and the controller, cancelled, stops leading.
func TestLeadershipLost(t *testing.T) {
	kube := kubefake.New()
	// Reactors may not be added while the clientset is in use: this one
	// is there from the start and refuses updates once unreachable is set.
	var unreachable atomic.Bool
	kube.PrependReactor("update", "leases", func(k8stesting.Action) (bool, kruntime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("API server unreachable")
		}
		return false, nil, nil
	})
	le := LeaderElection{Namespace: "kube-system", Name: "lost", LeaseDuration: 2 * time.Second,
		RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	a := startLeadReplica(t, kube, le, "a")
	eventually(t, "a leads", func() bool { return a.c.IsLeader() })
	unreachable.Store(true)
	select {
	case err := <-a.done:
		a.done <- err
		if err == nil || !strings.Contains(err.Error(), "leader election lost") {
			t.Fatalf("manager Start = %v, want leader election lost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not notice it lost the Lease")
	}
	eventually(t, "IsLeader false after the Lease was lost", func() bool { return !a.c.IsLeader() })
	if got := a.seen(); !slices.Equal(got, []bool{true, false}) || a.mismatch {
		t.Fatalf("calls %v (mismatch %v), want [true false]", got, a.mismatch)
	}
}

// Without leader election, IsLeader is true while Run runs.
func TestIsLeaderWithoutElection(t *testing.T) {
	h := newHarness(t, nil)
	if h.ctrl.IsLeader() {
		t.Fatal("IsLeader before Run")
	}
	h.start()
	eventually(t, "IsLeader while running", h.ctrl.IsLeader)
	eventually(t, "workers started", func() bool { return testutil.ToFloat64(h.ctrl.metrics.workers) > 0 })
	h.stop()
	if h.ctrl.IsLeader() {
		t.Fatal("IsLeader after Run returned")
	}
}
