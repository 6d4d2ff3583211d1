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
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func init() {
	register("controller", "reconcile cluster.k8s.io Machines with the providers of a directory", runController)
}

func runController(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default: $KUBECONFIG, else in-cluster config)")
	providersDir := fs.String("providers", "", "directory of provider modules NAME.wasm (+ optional NAME.yaml policy) or image entries NAME.provider.yaml; required")
	watch := fs.Bool("watch", true, "hot-reload providers when files in -providers change")
	namespace := fs.String("namespace", "", "only reconcile Machines in this namespace (default: all)")
	workers := fs.Int("workers", 5, "number of Machines reconciled concurrently")
	resync := fs.Duration("resync", 10*time.Minute, "period at which every Machine is reconciled again")
	poll := fs.Duration("poll-interval", 5*time.Second, "how soon a Machine whose instance is being created or deleted is looked at again")
	maxDeletePoll := fs.Duration("max-delete-poll-interval", 5*time.Minute, "cap of the backoff between calls of a provider's Delete while it reports the deletion in progress")
	metricsInterval := fs.Duration("metrics-interval", 10*time.Minute, "how often providers are given their Machines (SetMetricsForMachines) for the metrics they export; negative disables")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "how long reconciles in flight may finish after SIGTERM before their provider calls are cancelled")
	leaderElect := fs.Bool("leader-elect", true, "run only while holding the leader Lease (for several replicas)")
	leNamespace := fs.String("leader-election-namespace", "kube-system", "namespace of the leader Lease")
	leName := fs.String("leader-election-name", "wasmprov-controller", "name of the leader Lease")
	leID := fs.String("leader-election-id", "", "identity of this replica in the Lease (default: hostname_uuid)")
	leaseDuration := fs.Duration("lease-duration", 15*time.Second, "leader Lease duration")
	renewDeadline := fs.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before giving up")
	retryPeriod := fs.Duration("retry-period", 2*time.Second, "interval between leader election attempts")
	metricsAddr := fs.String("metrics-address", "127.0.0.1:8085", "address serving /metrics and /healthz ('' disables)")
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	qps := fs.Float64("kube-api-qps", 20, "client QPS towards the API server")
	burst := fs.Int("kube-api-burst", 40, "client burst towards the API server")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	images := addImageFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: wasmprov controller -providers DIR [flags]\n\n"+
			"Reconciles cluster.k8s.io/v1alpha1 Machines like machine-controller, with the provider\n"+
			"named by providerSpec.value.cloudProvider loaded from DIR/NAME.wasm.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *providersDir == "" {
		return errors.New("-providers DIR is required")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := kubeConfig(*kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	cfg.UserAgent = "wasmprov-controller"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	machines, err := controller.NewRESTMachineClient(cfg)
	if err != nil {
		return err
	}

	// The runtime and registry outlive ctx: calls in flight at SIGTERM
	// finish first, then everything is closed.
	bg := context.WithoutCancel(ctx)
	calls := metrics.New() // provider calls, errors by class, pools, reloads
	rtOpts := []runtime.Option{engineOption(), runtime.WithLogger(logger), runtime.WithKubernetesClient(kube),
		runtime.WithCallObserver(calls.ObserveCall)}
	if *cacheDir != "" {
		rtOpts = append(rtOpts, runtime.WithCompilationCacheDir(*cacheDir))
	}
	rt, err := runtime.New(rtOpts...)
	if err != nil {
		return err
	}
	defer rt.Close(bg)
	promReg, regEvents := controllerMetrics(calls, logger)
	// Serve /metrics and /healthz first: compiling large modules takes a while.
	if *metricsAddr != "" {
		stop, err := serveMetrics(*metricsAddr, promReg, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	imageOpts, err := images.registryOptions(logger, *providersDir)
	if err != nil {
		return err
	}
	reg := registry.New(rt, append([]registry.Option{registry.WithLogger(logger), registry.WithEventHandler(func(ev registry.Event) {
		regEvents.WithLabelValues(ev.Provider, string(ev.Kind)).Inc()
	})}, imageOpts...)...)
	calls.SetRegistry(reg)
	defer reg.Close(bg)
	if err := reg.LoadDir(ctx, *providersDir); err != nil {
		// One bad module does not stop the others; the watch retries it.
		logger.Error("loading providers", "dir", *providersDir, "err", err)
	}
	logger.Info("providers loaded", "dir", *providersDir, "names", reg.Names())
	if *watch {
		if err := reg.Watch(bg); err != nil {
			return err
		}
	}
	c, err := controller.New(controller.Options{
		Machines: machines, Kube: kube, Providers: registrySource(reg), Namespace: *namespace,
		Workers: *workers, ResyncPeriod: *resync, PollInterval: *poll, MaxDeletePollInterval: *maxDeletePoll,
		MetricsInterval: *metricsInterval, ShutdownTimeout: *shutdown,
		Registerer: promReg, Logger: logger,
	})
	if err != nil {
		return err
	}
	if !*leaderElect {
		return c.Run(ctx)
	}
	return c.RunWithLeaderElection(ctx, controller.LeaderElection{
		Namespace: *leNamespace, Name: *leName, Identity: *leID,
		LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod,
	})
}

// controllerMetrics is the controller's Prometheus registry: Go and
// process metrics, the registry's events, the runtime's calls and pools
// (calls), and the providers' own metrics from SetMetricsForMachines.
func controllerMetrics(calls *metrics.Collector, logger *slog.Logger) (*prometheus.Registry, *prometheus.CounterVec) {
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	regEvents := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmprov_registry_events_total",
		Help: "Provider registry events: loaded, reloaded, rejected, unloaded, drained, watch-error"},
		[]string{"provider", "kind"})
	promReg.MustRegister(regEvents, calls, calls.GuestCollector(logger))
	return promReg, regEvents
}

// registrySource gives the controller reg's providers: the seed's
// contract, plus machine-controller's current Cleanup and
// SetMetricsForMachines, which the controller uses when a provider offers
// them (controller.Cleaner, controller.MetricsSetter).
func registrySource(reg *registry.Registry) controller.ProviderSource {
	return controller.ProviderSourceFunc(func(name string) (cloud.ContextProvider, error) {
		h, err := reg.Get(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", controller.ErrUnknownProvider, err)
		}
		return registryProvider{h.ContextProvider(), h.Calls()}, nil
	})
}

// registryProvider is a registry handle as package controller takes it.
// Both views follow the handle's reloads.
type registryProvider struct {
	cloud.ContextProvider
	calls runtime.Calls
}

var (
	_ controller.Cleaner       = registryProvider{}
	_ controller.MetricsSetter = registryProvider{}
)

// Cleanup implements controller.Cleaner: the module's Delete, its
// IN_PROGRESS answer as done == false.
//
// NOT_FOUND (the instance is already gone) is done as well: the
// controller must not hold a finalizer for nothing.
func (p registryProvider) Cleanup(ctx context.Context, m *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData) (bool, error) {
	done, err := p.calls.Cleanup(ctx, m, runtime.SeedData(data))
	if cloudprovidererrors.IsNotFound(err) {
		return true, nil
	}
	return done, err
}

// SetMetricsForMachines implements controller.MetricsSetter. The samples
// the runtime accepts are what calls.GuestCollector exposes.
func (p registryProvider) SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList) error {
	return p.calls.SetMetricsForMachines(ctx, machines, nil)
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

func serveMetrics(addr string, g prometheus.Gatherer, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// A standby replica is ready too: it is waiting for the Lease.
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server", "err", err)
		}
	}()
	logger.Info("serving metrics", "address", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = srv.Close() }, nil
}
