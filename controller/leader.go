package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection configures RunWithLeaderElection.
type LeaderElection struct {
	// Namespace and Name of the Lease (default "kube-system"/"wasmprov-controller").
	Namespace, Name string
	// Identity of this replica (default hostname_uuid).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as in client-go
	// (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// OnLeadershipChange, if set, is called with true when this replica
	// starts leading and with false when it stops (the Lease lost, or
	// released at shutdown), after IsLeader changed. Calls come one at a
	// time, true and false alternating, starting with true; a replica
	// that never led gets none. It must not block: it runs on the
	// elector's path. Work that runs on every replica but acts only on
	// the leader (a WasmProvider reconciler writing status) uses it to
	// catch up at once.
	OnLeadershipChange func(leading bool)
}

// ErrLeadershipLost is returned by RunWithLeaderElection when the Lease
// could not be renewed: the process should exit so that it never works
// alongside the new leader.
var ErrLeadershipLost = errors.New("leader election lost")

// RunWithLeaderElection runs the controller only while this replica holds
// the Lease. It returns nil when ctx is cancelled (after reconciles in
// flight finished and the Lease was released, so a standby takes over at
// once) and ErrLeadershipLost when the Lease was lost.
func (c *Controller) RunWithLeaderElection(ctx context.Context, le LeaderElection) error {
	if c.opts.Kube == nil {
		return errors.New("controller: leader election needs Options.Kube")
	}
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = "wasmprov-controller"
	}
	if le.Identity == "" {
		host, _ := os.Hostname()
		le.Identity = host + "_" + string(uuid.NewUUID())
	}
	if le.LeaseDuration <= 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline <= 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod <= 0 {
		le.RetryPeriod = 2 * time.Second
	}
	c.electing.Store(true)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     c.opts.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}

	// The elector runs on its own context, cancelled only once the
	// controller has drained: the Lease is released (ReleaseOnCancel) after
	// the last provider call returned, never while one still runs.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	started := make(chan struct{})
	runErr := make(chan error, 1)
	// notLeading is closed once IsLeader turned false after leading: the
	// change runs on the AfterFunc's goroutine, and Run must not return
	// while IsLeader still says true.
	notLeading := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				close(started)
				c.log.Info("became leader", "identity", le.Identity, "lease", le.Namespace+"/"+le.Name)
				c.setLeading(true, le.OnLeadershipChange)
				// leading is done as soon as the Lease is lost, or (at
				// shutdown) just before it is released: from then on
				// another replica may lead.
				context.AfterFunc(leading, func() {
					c.setLeading(false, le.OnLeadershipChange)
					close(notLeading)
				})
				runCtx, cancel := context.WithCancel(ctx)
				stop := context.AfterFunc(leading, cancel)
				defer stop()
				err := c.Run(runCtx)
				cancel()
				runErr <- err
				leCancel()
			},
			OnStoppedLeading: func() {
				c.log.Info("stopped leading", "identity", le.Identity)
			},
			OnNewLeader: func(id string) {
				if id != le.Identity {
					c.log.Info("another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	stopWaiting := context.AfterFunc(ctx, func() {
		select {
		case <-started: // the leader path cancels leCtx after draining
		default:
			leCancel()
		}
	})
	defer stopWaiting()

	elector.Run(leCtx)

	select {
	case <-started:
		err := <-runErr
		// elector.Run has returned, which ended leading: the change is
		// under way, if not done.
		<-notLeading
		if err != nil {
			return err
		}
		if ctx.Err() == nil {
			return ErrLeadershipLost
		}
		return nil
	default:
		return nil // cancelled before becoming leader
	}
}

// IsLeader reports whether this replica leads now: under
// RunWithLeaderElection, while it holds the Lease; under Run (no
// election), while Run runs. It is false before either starts.
func (c *Controller) IsLeader() bool { return c.leading.Load() }

// setLeading records a leadership change and tells hook about it.
func (c *Controller) setLeading(leading bool, hook func(bool)) {
	c.leading.Store(leading)
	if hook != nil {
		hook(leading)
	}
}
