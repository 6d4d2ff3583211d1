package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Two replicas share one Lease (client-go's fake clientset stores it): only
// the leader reconciles; when it stops, it releases the Lease after its
// in-flight work and the other takes over.
func TestLeaderElectionOneReconcilerAndHandover(t *testing.T) {
	machines, mem := newFakeMachines(), newMemCloud()
	kube := kubefake.New()
	le := LeaderElection{Namespace: "kube-system", Name: "test", LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	type replica struct {
		c      *Controller
		cancel context.CancelFunc
		done   chan error
	}
	start := func(id string) *replica {
		c, err := New(Options{Machines: machines, Kube: kube, Logger: quietLogger(), PollInterval: 20 * time.Millisecond,
			Providers: NewMapSource(map[string]provider.Interface{"mem": mem}), Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		cfg := le
		cfg.Identity = id
		mgr := newManager(t, kube, &cfg)
		if err := c.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{c: c, cancel: cancel, done: make(chan error, 1)}
		go func() { r.done <- mgr.Start(ctx) }()
		return r
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("kube-system").Get(context.Background(), "test", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	a := start("a")
	eventually(t, "a leads", func() bool { return holder() == "a" })
	b := start("b")
	defer func() {
		b.cancel()
		<-b.done
	}()
	for i := range 3 {
		machines.Create(machine(fmt.Sprintf("m%d", i), "mem", `{"size":"s"}`))
	}
	for i := range 3 {
		eventually(t, "provisioned", func() bool {
			m, _ := machines.get("default", fmt.Sprintf("m%d", i))
			return m.Spec.ProviderID != nil
		})
	}
	reconciles := func(r *replica) float64 {
		n := 0.0
		for _, res := range []string{"success", "requeue", "terminal", "error"} {
			n += testutil.ToFloat64(r.c.metrics.reconciles.WithLabelValues(res))
		}
		return n
	}
	if reconciles(a) == 0 || reconciles(b) != 0 {
		t.Fatalf("reconciles: leader a %v, standby b %v", reconciles(a), reconciles(b))
	}

	a.cancel() // graceful: drains, then releases the Lease
	if err := <-a.done; err != nil {
		t.Fatalf("a: %v", err)
	}
	took := time.Now()
	eventually(t, "b leads", func() bool { return holder() == "b" })
	if d := time.Since(took); d > le.LeaseDuration {
		t.Errorf("handover took %v: the Lease was not released", d)
	}
	machines.Create(machine("late", "mem", `{"size":"s"}`))
	eventually(t, "b provisions", func() bool {
		m, _ := machines.get("default", "late")
		return m.Spec.ProviderID != nil
	})
	if reconciles(b) == 0 {
		t.Fatal("b leads but did not reconcile")
	}
}

func TestLeaderElectionNeedsKube(t *testing.T) {
	if _, err := NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, nil, &LeaderElection{}, quietLogger()); err == nil {
		t.Fatal("no error without a Kubernetes client")
	}
}

// The manager releases the Lease only after the controller drained: while
// an in-flight Create still runs at shutdown, this replica holds the Lease
// (a standby cannot start a Create for the same Machine); once it
// returns, the Lease is released at once.
func TestLeaseHeldUntilInFlightCreateFinished(t *testing.T) {
	machines, mem := newFakeMachines(), newMemCloud()
	mem.createStarted = make(chan struct{})
	mem.createRelease = make(chan struct{})
	kube := kubefake.New()
	le := LeaderElection{Namespace: "kube-system", Name: "drain", Identity: "a", LeaseDuration: 2 * time.Second,
		RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	c, err := New(Options{Machines: machines, Kube: kube, Logger: quietLogger(), ShutdownTimeout: time.Minute,
		Providers: NewMapSource(map[string]provider.Interface{"mem": mem}), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	mgr := newManager(t, kube, &le)
	if err := c.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	machines.Create(machine("slow", "mem", `{"size":"s"}`))
	<-mem.createStarted
	cancel()
	// Give the stop procedure a few retry periods to (wrongly) release.
	select {
	case err := <-done:
		t.Fatalf("the manager returned while a Create was in flight: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if h := leaseHolder(kube, "drain"); h != "a" || !c.IsLeader() {
		t.Fatalf("during the drain: Lease holder %q, IsLeader %v; want a, true", h, c.IsLeader())
	}
	close(mem.createRelease)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the manager did not return after the Create finished")
	}
	if h := leaseHolder(kube, "drain"); h != "" {
		t.Fatalf("Lease holder %q after the manager returned; want it released", h)
	}
}
