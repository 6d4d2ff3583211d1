//go:build !nokube

package main

// The reconcilers `wasmprov controller` adds to its manager beside the
// Machine controller, each behind its flag: -wasmproviders and
// -cluster-api.

import (
	"flag"
	"log/slog"

	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/controller/infrastructure"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/runtime/registry"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

func addClusterAPIFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("cluster-api", false,
		"also be a Cluster API infrastructure provider: reconcile infrastructure.wasmprov.io WasmMachines and WasmClusters "+
			"(their CRDs and Cluster API's core must be installed; see docs/CLUSTER-API.md)")
}

// setupClusterAPI adds the WasmMachine and WasmCluster reconcilers to
// mgr, serving WasmMachines with the providers of reg and the Machine
// controller's flags (workers, poll interval, delete backoff, shutdown
// grace). The Machine controller's SetMetricsForMachines gets the
// returned reconciler's Machines.
func setupClusterAPI(mgr manager.Manager, f *controllerFlags, reg *registry.Registry, recorder record.EventRecorder,
	promReg prometheus.Registerer, logger *slog.Logger) (*infrastructure.MachineReconciler, error) {
	r, err := infrastructure.NewMachineReconciler(infrastructure.MachineOptions{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Providers: reg, Recorder: recorder,
		Logger: logger.With("component", "wasmmachine"), Workers: *f.workers, PollInterval: *f.poll,
		MaxDeletePollInterval: *f.maxDeletePoll, ShutdownTimeout: *f.shutdown, Registerer: promReg,
		MaxConcurrentCreatesPerProvider: *f.createsPerProvider, MaxConcurrentCreatesPerOwner: *f.createsPerOwner,
	})
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	c := &infrastructure.ClusterReconciler{Client: mgr.GetClient(), Logger: logger.With("component", "wasmcluster")}
	if err := c.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return r, nil
}

// setupWasmProviders adds the WasmProvider reconciler to mgr (-wasmproviders):
// every replica loads WasmProviders into reg (a standby is warm when it
// takes over); with leader election only the leader, c's, writes their
// status.
func setupWasmProviders(mgr manager.Manager, cfg *rest.Config, f *controllerFlags, c *controller.Controller, kube kubernetes.Interface,
	reg *registry.Registry, recorder record.EventRecorder, promReg prometheus.Registerer, clients *ociClients, logger *slog.Logger) (*wasmprovider.Reconciler, error) {
	wpClient, err := wasmprovider.NewRESTClient(cfg)
	if err != nil {
		return nil, err
	}
	opts := wasmprovider.Options{Client: wpClient, Kube: kube, Loader: reg, Recorder: recorder,
		Registerer: promReg, Logger: logger.With("component", "wasmprovider")}
	if *f.leaderElect {
		opts.IsLeader = c.IsLeader
	}
	r, err := wasmProviderReconciler(opts, clients, f.images.oci.maxBlob, f.wasmProviders.poll)
	if err != nil {
		return nil, err
	}
	return r, r.SetupWithManager(mgr)
}
