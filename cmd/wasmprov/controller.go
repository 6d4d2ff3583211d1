//go:build !nokube

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/controller/infrastructure"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func init() {
	register("controller", "reconcile cluster.k8s.io Machines with the providers of a directory or of WasmProvider resources", runController)
}

// controllerFlags are the flags of `wasmprov controller`, parsed.
type controllerFlags struct {
	fs                                           *flag.FlagSet
	kubeconfig, providersDir, namespace          *string
	watch, leaderElect                           *bool
	workers, createsPerProvider, createsPerOwner *int
	resync, poll, maxDeletePoll                  *time.Duration
	metricsInterval, shutdown                    *time.Duration
	leNamespace, leName, leID                    *string
	leaseDuration, renewDeadline, retryPeriod    *time.Duration
	metricsAddr, cacheDir, logLevel              *string
	qps                                          *float64
	burst                                        *int
	images                                       *imageFlags
	wasmProviders                                *wasmProviderFlags
	clusterAPI                                   *bool
	level                                        slog.Level
}

// parseControllerFlags parses and checks the command line; it connects
// to nothing.
func parseControllerFlags(args []string) (*controllerFlags, error) {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	f := &controllerFlags{fs: fs}
	f.kubeconfig = fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default: $KUBECONFIG, else in-cluster config)")
	f.providersDir = fs.String("providers", "", "directory of provider modules NAME.wasm (+ optional NAME.yaml policy) or image entries NAME.provider.yaml; required unless -wasmproviders")
	f.watch = fs.Bool("watch", true, "hot-reload providers when files in -providers change")
	f.namespace = fs.String("namespace", "", "only reconcile Machines in this namespace (default: all)")
	f.workers = fs.Int("workers", 5, "number of Machines reconciled concurrently")
	f.createsPerProvider = fs.Int("max-concurrent-creates-per-provider", 0, "cap of provider Create calls running at once per provider, for Machines and for WasmMachines (0: none)")
	f.createsPerOwner = fs.Int("max-concurrent-creates-per-owner", 0, "cap of Create calls running at once per owner of a Machine (its MachineSet) (0: none)")
	f.resync = fs.Duration("resync", 10*time.Minute, "period at which every Machine is reconciled again")
	f.poll = fs.Duration("poll-interval", 5*time.Second, "how soon a Machine whose instance is being created or deleted is looked at again")
	f.maxDeletePoll = fs.Duration("max-delete-poll-interval", 5*time.Minute, "cap of the backoff between calls of a provider's Delete while it reports the deletion in progress")
	f.metricsInterval = fs.Duration("metrics-interval", 10*time.Minute, "how often providers are given their Machines (SetMetricsForMachines) for the metrics they export; negative disables")
	f.shutdown = fs.Duration("shutdown-timeout", 30*time.Second, "how long reconciles in flight may finish after SIGTERM before their provider calls are cancelled")
	f.leaderElect = fs.Bool("leader-elect", true, "run only while holding the leader Lease (for several replicas)")
	f.leNamespace = fs.String("leader-election-namespace", "kube-system", "namespace of the leader Lease")
	f.leName = fs.String("leader-election-name", "wasmprov-controller", "name of the leader Lease")
	f.leID = fs.String("leader-election-id", "", "identity of this replica in the Lease (default: hostname_uuid)")
	f.leaseDuration = fs.Duration("lease-duration", 15*time.Second, "leader Lease duration")
	f.renewDeadline = fs.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before giving up")
	f.retryPeriod = fs.Duration("retry-period", 2*time.Second, "interval between leader election attempts")
	f.metricsAddr = fs.String("metrics-address", "127.0.0.1:8085", "address serving /metrics, /healthz and /readyz ('' disables)")
	f.cacheDir = fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	f.qps = fs.Float64("kube-api-qps", 20, "client QPS towards the API server")
	f.burst = fs.Int("kube-api-burst", 40, "client burst towards the API server")
	f.logLevel = fs.String("log-level", "info", "debug, info, warn or error")
	f.images = addImageFlags(fs)
	f.wasmProviders = addWasmProviderFlags(fs)
	f.clusterAPI = addClusterAPIFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: wasmprov controller [-providers DIR] [-wasmproviders] [flags]\n\n"+
			"Reconciles cluster.k8s.io/v1alpha1 Machines like machine-controller, with the provider\n"+
			"named by providerSpec.value.cloudProvider loaded from DIR/NAME.wasm or, with\n"+
			"-wasmproviders, from the wasmprov.io/v1alpha1 WasmProvider of that spec.cloudProvider.\n"+
			"With -cluster-api, it is also a Cluster API infrastructure provider: WasmMachines are\n"+
			"made by the same providers, from the same providerSpec (docs/CLUSTER-API.md).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.wasmProviders.validate(*f.providersDir); err != nil {
		return nil, err
	}
	if err := f.level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	return f, nil
}

func runController(ctx context.Context, args []string) error {
	f, err := parseControllerFlags(args)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: f.level}))
	// controller-runtime's own log lines (the manager's, the leader
	// election's) go to the same logger.
	crlog.SetLogger(logr.FromSlogHandler(logger.Handler()))

	cfg, kube, machines, err := controllerClients(f)
	if err != nil {
		return err
	}

	// The runtime and registry outlive ctx: calls in flight at SIGTERM
	// finish first, then everything is closed.
	bg := context.WithoutCancel(ctx)
	calls := metrics.New() // provider calls, errors by class, pools, reloads
	rt, err := controllerRuntime(f, kube, calls, logger)
	if err != nil {
		return err
	}
	defer rt.Close(bg)
	promReg, regEvents := controllerMetrics(calls, logger)
	// Serve /metrics and /healthz first: compiling large modules takes a
	// while. /readyz waits for what ready is set to.
	var ready readiness
	if *f.metricsAddr != "" {
		stop, err := serveMetrics(*f.metricsAddr, controllerGatherer(promReg), &ready, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	// One client factory and one store for image entries and
	// WasmProviders; the registry's verifier checks the verify blocks of
	// both.
	clients, err := newOCIClients(f.images, logger)
	if err != nil {
		return err
	}
	imageOpts, err := clients.registryOptions(f.images, logger)
	if err != nil {
		return err
	}
	reg := registry.New(rt, append([]registry.Option{registry.WithLogger(logger), registry.WithEventHandler(func(ev registry.Event) {
		regEvents.WithLabelValues(ev.Provider, string(ev.Kind)).Inc()
	})}, imageOpts...)...)
	calls.SetRegistry(reg)
	defer reg.Close(bg)
	if err := loadProvidersDir(ctx, bg, f, reg, logger); err != nil {
		return err
	}
	recorder, stopEvents, err := eventRecorder(bg, kube)
	if err != nil {
		return err
	}
	defer stopEvents()
	// r, the WasmProvider reconciler (with -wasmproviders), catches up at
	// once when this replica starts or stops leading; infra (with
	// -cluster-api) adds its WasmMachines to the providers' metrics.
	var r *wasmprovider.Reconciler
	var infra *infrastructure.MachineReconciler
	c, err := controller.New(controller.Options{
		Machines: machines, Kube: kube, Providers: reg, Namespace: *f.namespace,
		Workers: *f.workers, ResyncPeriod: *f.resync,
		MaxConcurrentCreatesPerProvider: *f.createsPerProvider, MaxConcurrentCreatesPerOwner: *f.createsPerOwner, PollInterval: *f.poll, MaxDeletePollInterval: *f.maxDeletePoll,
		MetricsInterval: *f.metricsInterval, ShutdownTimeout: *f.shutdown,
		Registerer: promReg, Recorder: recorder, Logger: logger,
		MoreMachines: func(ctx context.Context) []clusterv1alpha1.Machine {
			if infra == nil {
				return nil
			}
			return infra.Machines(ctx)
		},
		OnLeadershipChange: func(bool) {
			if r != nil {
				r.LeadershipChanged()
			}
		},
	})
	if err != nil {
		return err
	}
	var le *controller.LeaderElection
	if *f.leaderElect {
		le = &controller.LeaderElection{
			Namespace: *f.leNamespace, Name: *f.leName, Identity: *f.leID,
			LeaseDuration: *f.leaseDuration, RenewDeadline: *f.renewDeadline, RetryPeriod: *f.retryPeriod,
		}
	}
	mgr, err := controller.NewManager(cfg, kube, le, logger, controller.WithNamespace(*f.namespace))
	if err != nil {
		return err
	}
	if err := c.SetupWithManager(mgr); err != nil {
		return err
	}
	if *f.clusterAPI {
		if infra, err = setupClusterAPI(mgr, f, reg, recorder, promReg, logger); err != nil {
			return err
		}
	}
	if f.wasmProviders.enabled {
		if r, err = setupWasmProviders(mgr, cfg, f, c, kube, reg, recorder, promReg, clients, logger); err != nil {
			return err
		}
		ready.set(r.HasSynced)
	}
	// Start returns when ctx ends, after the controllers drained and the
	// Lease was released; or with an error when one of them failed or the
	// Lease was lost (the process then exits, another replica may lead).
	return mgr.Start(ctx)
}

// controllerClients connects to the API server -kubeconfig names: the
// config (for more clients), the Kubernetes client and the Machine client.
func controllerClients(f *controllerFlags) (*rest.Config, *kubernetes.Clientset, *controller.RESTMachineClient, error) {
	cfg, err := kubeConfig(*f.kubeconfig)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.QPS, cfg.Burst = float32(*f.qps), *f.burst
	cfg.UserAgent = "wasmprov-controller"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	machines, err := controller.NewRESTMachineClient(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, kube, machines, nil
}

// controllerRuntime is the runtime the providers run in: its calls
// observed by calls, their Machines' references resolved through kube.
func controllerRuntime(f *controllerFlags, kube kubernetes.Interface, calls *metrics.Collector, logger *slog.Logger) (*runtime.Runtime, error) {
	rtOpts := []runtime.Option{engineOption(), runtime.WithLogger(logger), runtime.WithKubernetesClient(kube),
		runtime.WithCallObserver(calls.ObserveCall)}
	if *f.cacheDir != "" {
		rtOpts = append(rtOpts, runtime.WithCompilationCacheDir(*f.cacheDir))
	}
	return runtime.New(rtOpts...)
}

// loadProvidersDir loads the modules of -providers into reg and, with
// -watch, watches the directory for changes; nothing without -providers.
func loadProvidersDir(ctx, bg context.Context, f *controllerFlags, reg *registry.Registry, logger *slog.Logger) error {
	if *f.providersDir == "" {
		return nil
	}
	if err := reg.LoadDir(ctx, *f.providersDir); err != nil {
		// One bad module does not stop the others; the watch retries it.
		logger.Error("loading providers", "dir", *f.providersDir, "err", err)
	}
	logger.Info("providers loaded", "dir", *f.providersDir, "names", reg.Names())
	if *f.watch {
		if err := reg.Watch(bg); err != nil {
			return err
		}
	}
	return nil
}

// readiness is what /readyz reports: ready until set, then what the
// function set says.
type readiness struct{ fn atomic.Pointer[func() bool] }

func (r *readiness) set(fn func() bool) { r.fn.Store(&fn) }

func (r *readiness) ready() bool {
	fn := r.fn.Load()
	return fn == nil || (*fn)()
}

// controllerMetrics is the controller's Prometheus registry: the
// registry's events, the runtime's calls and pools (calls), and the
// providers' own metrics from SetMetricsForMachines.
func controllerMetrics(calls *metrics.Collector, logger *slog.Logger) (*prometheus.Registry, *prometheus.CounterVec) {
	promReg := prometheus.NewRegistry()
	regEvents := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmprov_registry_events_total",
		Help: "Provider registry events: loaded, reloaded, rejected, unloaded, drained, watch-error"},
		[]string{"provider", "kind"})
	promReg.MustRegister(regEvents, calls, calls.GuestCollector(logger))
	return promReg, regEvents
}

// controllerGatherer is what /metrics serves: promReg and
// controller-runtime's registry, where the controllers' workers report
// (controller_runtime_reconcile_total, workqueue_depth, … labelled
// controller="machine" or "wasmprovider") and which already holds the Go
// and process collectors (controller-runtime's controller package
// registers them), so promReg must not hold them again.
func controllerGatherer(promReg *prometheus.Registry) prometheus.Gatherer {
	return prometheus.Gatherers{promReg, crmetrics.Registry}
}

func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no -kubeconfig and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

func serveMetrics(addr string, g prometheus.Gatherer, ready *readiness, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-address: %w", err)
	}
	srv := &http.Server{Handler: metricsMux(g, ready), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server", "err", err)
		}
	}()
	logger.Info("serving metrics", "address", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = srv.Close() }, nil
}

// metricsMux serves /metrics, /healthz and /readyz.
func metricsMux(g prometheus.Gatherer, ready *readiness) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// A standby replica is ready too: it is waiting for the Lease.
		// With -wasmproviders, once every WasmProvider seen at start was
		// reconciled (loaded, or refused), so that a rollout waits for
		// the new replicas to be warm.
		if !ready.ready() {
			http.Error(w, "WasmProviders not reconciled yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
