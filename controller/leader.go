package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// LeaderElection configures the Lease NewManager elects a leader with.
type LeaderElection struct {
	// Namespace and Name of the Lease (default "kube-system"/"wasmprov-controller").
	Namespace, Name string
	// Identity of this replica (default hostname_uuid).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as in client-go
	// (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// NewManager returns the controller-runtime manager the controllers run
// in (SetupWithManager): with le, only the replica holding the Lease runs
// the Machine controller; with le nil, this replica always does.
//
// The manager is configured for the controllers' shutdown rule (RATIONALE
// point 3): it waits for its runnables without a limit of its own (the
// Machine controller bounds its drain by Options.ShutdownTimeout), and
// releases the Lease only after they all returned, so a standby never
// starts a Create while this replica's still runs. When the Lease is lost
// instead, Start returns controller-runtime's "leader election lost" at
// once, without waiting: the process must then exit, as another replica
// may already lead.
//
// The manager serves no metrics or health endpoints of its own (the CLI's
// -metrics-address serves both, controller-runtime's metrics included).
// The Machine and WasmProvider controllers keep their own informers and
// uncached clients (RATIONALE.md); the manager's cache and client serve
// the Cluster API controllers of package controller/infrastructure, the
// cache limited to WithNamespace's namespace if given.
func NewManager(cfg *rest.Config, kube KubeClient, le *LeaderElection, log *slog.Logger, opts ...ManagerOption) (manager.Manager, error) {
	var mo managerOptions
	for _, o := range opts {
		o(&mo)
	}
	if log == nil {
		log = slog.Default()
	}
	forever := time.Duration(-1)
	managerOpts := manager.Options{
		Scheme:                  Scheme,
		Logger:                  logr.FromSlogHandler(log.Handler()),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		GracefulShutdownTimeout: &forever,
		// Cluster API's Machines and Clusters are read unstructured
		// (no Cluster API module is imported): from the cache, as the
		// typed kinds are. Secrets never are: a cache of them would
		// need list and watch of every Secret.
		Client: client.Options{Cache: &client.CacheOptions{
			Unstructured: true,
			DisableFor:   []client.Object{&corev1.Secret{}},
		}},
	}
	if mo.namespace != "" {
		managerOpts.Cache.DefaultNamespaces = map[string]cache.Config{mo.namespace: {}}
	}
	if le != nil {
		if kube == nil {
			return nil, errors.New("controller: leader election needs a Kubernetes client")
		}
		l := le.withDefaults()
		managerOpts.LeaderElection = true
		managerOpts.LeaderElectionID = l.Name
		managerOpts.LeaderElectionNamespace = l.Namespace
		managerOpts.LeaderElectionReleaseOnCancel = true
		managerOpts.LeaseDuration, managerOpts.RenewDeadline, managerOpts.RetryPeriod = &l.LeaseDuration, &l.RenewDeadline, &l.RetryPeriod
		// The Lease through the given client, so that tests can hand a
		// fake of coordination/v1 (internal/testing/kubefake).
		managerOpts.LeaderElectionResourceLockInterface = &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.Identity},
		}
		log.Info("leader election", "identity", l.Identity, "lease", l.Namespace+"/"+l.Name)
	}
	mgr, err := manager.New(cfg, managerOpts)
	if err != nil {
		return nil, fmt.Errorf("controller: manager: %w", err)
	}
	return mgr, nil
}

// ManagerOption configures NewManager.
type ManagerOption func(*managerOptions)

type managerOptions struct{ namespace string }

// WithNamespace limits the manager's cache (and with it what the Cluster
// API controllers see) to one namespace, as the Machine controller's
// Options.Namespace limits its informer.
func WithNamespace(ns string) ManagerOption {
	return func(o *managerOptions) { o.namespace = ns }
}

func (le LeaderElection) withDefaults() LeaderElection {
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
	return le
}

// SetupWithManager adds the controller to mgr as a runnable that needs
// leader election: it runs (Run) while this replica leads, and only then.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(c.Run))
}

// IsLeader reports whether this replica leads now: while Run runs, which
// under a manager with leader election is while it holds the Lease. It is
// false before Run starts and after it returned.
func (c *Controller) IsLeader() bool { return c.leading.Load() }

// setLeading records a leadership change and tells
// Options.OnLeadershipChange about it.
func (c *Controller) setLeading(leading bool) {
	c.leading.Store(leading)
	if c.opts.OnLeadershipChange != nil {
		c.opts.OnLeadershipChange(leading)
	}
}
