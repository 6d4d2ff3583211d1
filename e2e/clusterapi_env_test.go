//go:build e2e

package e2e

// The Cluster API side of the e2e harness: Cluster API's own core
// controllers (Cluster, Machine, MachineSet, MachineDeployment and the
// ClusterCache), run in the test binary against the envtest API server,
// the way CAPI's core/main.go wires them; a node faker standing in for
// kubelets; and builders for the objects a test applies. The workload
// cluster is the envtest API server itself.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
)

const (
	capiModule = "sigs.k8s.io/cluster-api"

	// infraGroup is the API group of wasmprov's Cluster API provider.
	infraGroup   = "infrastructure.wasmprov.io"
	infraVersion = infraGroup + "/v1alpha1"

	// The harness's stand-in for a control plane provider (see
	// e2eControlPlaneCRD).
	cpGroup   = "controlplane.e2e.wasmprov.io"
	cpVersion = cpGroup + "/v1alpha1"
	cpKind    = "E2EControlPlane"

	// nodeNamespaceLabel marks the Nodes the node faker made, with the
	// namespace of the CAPI environment that made them. Each
	// environment's ClusterCache only sees Nodes with its own value, so
	// tests that run Cluster API side by side on the one API server never
	// link each other's Nodes.
	nodeNamespaceLabel = "e2e.wasmprov.io/capi-namespace"
)

// capiCRDDir is the directory of Cluster API's core CRDs, for envtest to
// install: core/config/crd/bases of the sigs.k8s.io/cluster-api module the
// e2e module requires, in the module cache. All of them: the harness's
// controllers need Cluster, Machine, MachineSet, MachineDeployment and
// MachineDrainRule (a Machine's Node is drained by its rules); the others
// (ClusterClass, MachinePool, MachineHealthCheck, ClusterResourceSet, IPAM,
// ExtensionConfig) cost nothing measurable (the API server is up in about
// 4.9 s either way, 4.1 s without any) and spare a list to keep in step
// with Cluster API. The module's directory is what `go list -m` reports
// (it honours replace directives and works under make e2e's
// GOFLAGS=-mod=mod); a test binary's build info lists no dependencies,
// and runMain needs go anyway, to build wasmprov.
func capiCRDDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", capiModule)
	cmd.Dir = filepath.Join(root, "e2e")
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return "", fmt.Errorf("go list -m %s: %v: %s", capiModule, err, ee.Stderr)
	} else if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", capiModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: no directory (not downloaded? run make modules)", capiModule)
	}
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	if _, err := os.Stat(filepath.Join(bases, "cluster.x-k8s.io_machinedeployments.yaml")); err != nil {
		return "", fmt.Errorf("cluster API CRDs: %w", err)
	}
	return bases, nil
}

// e2eControlPlaneCRD is the CRD of E2EControlPlane, the harness's stand-in
// for a control plane provider, whose objects say what the envtest API
// server is to Cluster API: an initialized, externally managed control
// plane (as EKS, AKS or GKE are), following the v1beta2 ControlPlane
// contract (status.initialization.controlPlaneInitialized,
// status.externalManagedControlPlane, spec.controlPlaneEndpoint). The
// control plane faker (syncControlPlanes) writes their status.
//
// A Cluster without a control plane reference would not do: CAPI then
// counts its control plane as initialized only once a control plane
// Machine has a Node, and there is none, so it would never watch the
// workload cluster's Nodes nor report any Machine's Node ready (no
// MachineDeployment would become available); and, with no control plane
// Machines, it never drains or deletes a deleted Machine's Node. With an
// externally managed control plane it does all of that, as in production.
func e2eControlPlaneCRD() *apiextensionsv1.CustomResourceDefinition {
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name: "e2econtrolplanes." + cpGroup,
			// The contract label: CAPI reads the CRD to find the API
			// version of a v1beta2 reference (which names only the group).
			Labels: map[string]string{"cluster.x-k8s.io/v1beta2": "v1alpha1"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: cpGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: cpKind, ListKind: cpKind + "List", Plural: "e2econtrolplanes", Singular: "e2econtrolplane",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: ptr.To(obj(map[string]apiextensionsv1.JSONSchemaProps{
					"apiVersion": {Type: "string"}, "kind": {Type: "string"}, "metadata": {Type: "object"},
					"spec": open, "status": open,
				}))},
			}},
		},
	}
}

var installE2EControlPlaneCRD = sync.OnceValue(func() error {
	_, err := envtest.InstallCRDs(adminCfg, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{e2eControlPlaneCRD()},
	})
	return err
})

// capiScheme is what CAPI's core manager registers, less the API versions
// and groups of the controllers the harness does not run.
var capiScheme = func() *kruntime.Scheme {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, clusterv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// capiGates: the controllers the harness runs, as a default CAPI core
// manager runs them, except that two beta gates, on by default, are off:
// MachinePool (no MachinePool controller, CRD or watches), and
// ReconcilerRateLimiting, which would hold every object to one reconcile a
// second and, worse, does not work with a cache limited to namespaces: its
// stale-cache check casts the cache's informer to a SharedIndexInformer,
// which a namespaced cache's is not, so the MachineDeployment controller
// fails every reconcile ("failed to cast MachineSet informer to
// SharedIndexInformer", CAPI v1.14.2; the same with core's --namespace).
// ClusterTopology, RuntimeSDK and InPlaceUpdates stay off (their default).
var capiGates = sync.OnceValue(func() error {
	return feature.MutableGates.SetFromMap(map[string]bool{
		string(feature.MachinePool):            false,
		string(feature.ReconcilerRateLimiting): false,
		string(feature.ClusterTopology):        false,
		string(feature.RuntimeSDK):             false,
		string(feature.InPlaceUpdates):         false,
	})
})

// capiEnv is Cluster API's core controllers running for one namespace.
type capiEnv struct {
	t  *testing.T
	ns string
	// c is an uncached admin client with the CAPI scheme, for the test.
	c   client.Client
	log *lockedBuffer

	mu    sync.Mutex
	nodes nodeCounts
	faker bool
}

// Knobs, for test speed; CAPI's defaults in comments.
const (
	capiSyncPeriod       = 10 * time.Second // --sync-period 10m
	capiConcurrency      = 4                // 50-100 per controller
	capiConnectRetry     = time.Second      // ClusterCache ConnectionCreationRetryInterval 30s
	capiRemoteConnGrace  = 50 * time.Second // --remote-connection-grace-period (default)
	capiRemoteCondsGrace = 5 * time.Minute  // --remote-conditions-grace-period (default; at least 2m)
	capiShutdownTimeout  = 10 * time.Second
	capiFakeInterval     = 200 * time.Millisecond // the node and control plane fakers' polling
)

// capiLogVerbosity is the verbosity of CAPI's logs in the buffer: 2, as
// CAPI's manager runs by default, or E2E_CAPI_V.
func capiLogVerbosity() int {
	if v, err := strconv.Atoi(os.Getenv("E2E_CAPI_V")); err == nil {
		return v
	}
	return 2
}

// startClusterAPI starts CAPI's core controllers on the envtest API server
// for namespace ns (its cache sees nothing else): the ClusterCache and the
// Cluster, Machine, MachineSet and MachineDeployment reconcilers, no
// webhooks, metrics, health probes or leader election. They stop when the
// test ends; their logs are printed if it failed (and go to stderr with
// E2E_VERBOSE).
func startClusterAPI(t *testing.T, ns string) *capiEnv {
	t.Helper()
	if err := capiGates(); err != nil {
		t.Fatal(err)
	}
	if err := installE2EControlPlaneCRD(); err != nil {
		t.Fatalf("installing the E2EControlPlane CRD: %v", err)
	}
	e := &capiEnv{t: t, ns: ns, log: &lockedBuffer{}}
	var out io.Writer = e.log
	if verbose {
		out = io.MultiWriter(e.log, prefixWriter(os.Stderr, "capi "+ns))
	}
	logger := newCAPILogger(out)
	unregister := registerCAPILog(e.log)
	t.Cleanup(func() { // last: after everything below has stopped
		unregister()
		if t.Failed() {
			t.Logf("---- Cluster API controllers (%s) ----\n%s", ns, tail(e.log.String(), 150))
		}
	})

	c, err := client.New(adminCfg, client.Options{Scheme: capiScheme})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c

	// As core/main.go: QPS and burst as its defaults, its user agent.
	controllerName := "capi-e2e-" + ns // informer names must be unique in the process
	cfg := rest.CopyConfig(adminCfg)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)
	cfg.WarningHandler = rest.NoWarnings{}

	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logger))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: capiScheme,
		Logger: logger,
		Controller: config.Controller{
			UsePriorityQueue: ptr.To(feature.Gates.Enabled(feature.PriorityQueue)),
			// Every test's manager registers the same controller names.
			SkipNameValidation: ptr.To(true),
		},
		Cache:                   setup.ManagerCacheOptions(capiScheme, controllerName, ns, capiSyncPeriod),
		Client:                  setup.ManagerClientOptions(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          false,
		GracefulShutdownTimeout: ptr.To(capiShutdownTimeout),
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	clusterCache, err := setupCAPI(ctx, mgr, controllerName, ns)
	if err != nil {
		cancel()
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("cluster API manager: %v", err)
			}
		case <-time.After(capiShutdownTimeout + 10*time.Second):
			t.Errorf("cluster API manager did not stop in %v", capiShutdownTimeout+10*time.Second)
		}
		// The caches and watches the ClusterCache keeps on the workload
		// cluster outlive the manager (core/main.go never stops them but
		// by exiting); Shutdown is the ClusterCache's way for tests.
		if s, ok := clusterCache.(interface{ Shutdown() }); ok {
			s.Shutdown()
		}
	})
	e.every("control plane faker", e.syncControlPlanes) // stops before the manager
	return e
}

// setupCAPI adds what core/main.go's setupIndexes and setupReconcilers add,
// for the controllers the harness runs.
func setupCAPI(ctx context.Context, mgr ctrl.Manager, controllerName, ns string) (clustercache.ClusterCache, error) {
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return nil, fmt.Errorf("indexes: %w", err)
	}
	secretCachingClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, err
	}
	cacheOpts := setup.ClusterCacheCacheOptions()
	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{nodeNamespaceLabel: ns}})
	if err != nil {
		return nil, err
	}
	cacheOpts.ByObject = map[client.Object]ctrlcache.ByObject{&corev1.Node{}: {Label: sel}}
	concurrency := controller.Options{MaxConcurrentReconciles: capiConcurrency}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretCachingClient,
		Cache:        cacheOpts,
		Client:       setup.ClusterCacheClientOptions(controllerName, 20, 30),
	}, concurrency)
	if err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	// A test-only knob of the implementation (not of the interface).
	if s, ok := clusterCache.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(capiConnectRetry)
	}
	if err := (&cluster.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                clusterCache,
		RemoteConnectionGracePeriod: capiRemoteConnGrace,
	}).SetupWithManager(ctx, mgr, concurrency); err != nil {
		return nil, fmt.Errorf("cluster controller: %w", err)
	}
	if err := (&machine.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                clusterCache,
		RemoteConditionsGracePeriod: capiRemoteCondsGrace,
	}).SetupWithManager(ctx, mgr, concurrency); err != nil {
		return nil, fmt.Errorf("machine controller: %w", err)
	}
	if err := (&machineset.Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		ClusterCache:    clusterCache,
		PreflightChecks: sets.New(clusterv1.MachineSetPreflightCheckAll),
	}).SetupWithManager(ctx, mgr, concurrency); err != nil {
		return nil, fmt.Errorf("machineset controller: %w", err)
	}
	if err := (&machinedeployment.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, concurrency); err != nil {
		return nil, fmt.Errorf("machinedeployment controller: %w", err)
	}
	return clusterCache, nil
}

func newCAPILogger(w io.Writer) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if prefix != "" {
			prefix += " "
		}
		fmt.Fprintf(w, "%s %s%s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: capiLogVerbosity()})
}

// Some of CAPI's logging does not go through the manager's logger but
// through controller-runtime's global one (goroutines of the ClusterCache)
// or klog (client-go): those lines go to every running environment's log.
var capiGlobalLog struct {
	once sync.Once
	mu   sync.Mutex
	bufs map[*lockedBuffer]bool
}

func registerCAPILog(b *lockedBuffer) (unregister func()) {
	capiGlobalLog.once.Do(func() {
		capiGlobalLog.bufs = map[*lockedBuffer]bool{}
		var out io.Writer = capiGlobalWriter{}
		if verbose {
			out = io.MultiWriter(out, prefixWriter(os.Stderr, "capi"))
		}
		l := newCAPILogger(out)
		ctrl.SetLogger(l)
		klog.SetLogger(l)
	})
	capiGlobalLog.mu.Lock()
	defer capiGlobalLog.mu.Unlock()
	capiGlobalLog.bufs[b] = true
	return func() {
		capiGlobalLog.mu.Lock()
		defer capiGlobalLog.mu.Unlock()
		delete(capiGlobalLog.bufs, b)
	}
}

type capiGlobalWriter struct{}

func (capiGlobalWriter) Write(p []byte) (int, error) {
	capiGlobalLog.mu.Lock()
	defer capiGlobalLog.mu.Unlock()
	for b := range capiGlobalLog.bufs {
		_, _ = b.Write(p)
	}
	return len(p), nil
}

// capiNamespace creates a namespace for a Cluster API test.
func capiNamespace(t *testing.T) string {
	t.Helper()
	ns := "e2e-capi-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.TrimRight(ns, "-") + "-" + rand.String(4)
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// ---- the objects a test applies ---------------------------------------------

// capiCluster is a Cluster whose infrastructure is the WasmCluster of the
// same name and whose control plane is the E2EControlPlane of the same
// name: the envtest API server (see e2eControlPlaneCRD).
func capiCluster(ns, name string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infraGroup, Kind: "WasmCluster", Name: name,
			},
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: cpGroup, Kind: cpKind, Name: name,
			},
		},
	}
}

// e2eControlPlane is an E2EControlPlane. The control plane faker sets its
// status to e2eControlPlaneStatus.
func e2eControlPlane(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cpVersion, "kind": cpKind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{},
	}}
}

// e2eControlPlaneStatus: initialized and externally managed.
var e2eControlPlaneStatus = map[string]any{
	"initialization":              map[string]any{"controlPlaneInitialized": true},
	"externalManagedControlPlane": true,
}

// syncControlPlanes is the control plane faker, the E2EControlPlanes'
// controller: once a Cluster's infrastructure is provisioned and CAPI's
// ClusterCache has connected to the workload cluster (the Cluster's
// RemoteConnectionProbe condition), its E2EControlPlane is initialized. A
// control plane cannot come up before its infrastructure, and CAPI would
// fail to watch the workload cluster's Nodes (and retry with back-off) if
// it were initialized before the connection exists.
func (e *capiEnv) syncControlPlanes(ctx context.Context) error {
	var clusters clusterv1.ClusterList
	if err := e.c.List(ctx, &clusters, client.InNamespace(e.ns)); err != nil {
		return err
	}
	for _, c := range clusters.Items {
		ref := c.Spec.ControlPlaneRef
		if ref.APIGroup != cpGroup || ref.Kind != cpKind || !ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) ||
			!conditions.IsTrue(&c, clusterv1.ClusterRemoteConnectionProbeCondition) {
			continue
		}
		cp := &unstructured.Unstructured{}
		cp.SetAPIVersion(cpVersion)
		cp.SetKind(cpKind)
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: ref.Name}, cp); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if done, _, _ := unstructured.NestedBool(cp.Object, "status", "initialization", "controlPlaneInitialized"); done {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"status": e2eControlPlaneStatus})
		if err := e.c.Status().Patch(ctx, cp, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
	}
	return nil
}

// wasmCluster is a WasmCluster; host "" leaves spec.controlPlaneEndpoint
// out.
func wasmCluster(ns, name, host string, port int32) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": infraVersion, "kind": "WasmCluster",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{},
	}}
	if host != "" {
		u.Object["spec"] = map[string]any{"controlPlaneEndpoint": map[string]any{"host": host, "port": int64(port)}}
	}
	return u
}

// wasmMachineTemplate is a WasmMachineTemplate whose WasmMachines get
// providerSpec (anything that marshals to a JSON object: a map, a struct,
// json.RawMessage) as spec.providerSpec.
func wasmMachineTemplate(ns, name string, providerSpec any) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(providerSpec)
	if err != nil {
		return nil, err
	}
	var spec map[string]any
	if err := utiljson.Unmarshal(raw, &spec); err != nil { // int64s, as unstructured wants
		return nil, fmt.Errorf("providerSpec is not a JSON object: %w", err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": infraVersion, "kind": "WasmMachineTemplate",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"providerSpec": spec},
		}},
	}}, nil
}

// bootstrapSecret is a bootstrap data Secret, as a bootstrap provider
// writes one (key value, format cloud-config), for a MachineDeployment's
// spec.template.spec.bootstrap.dataSecretName.
func bootstrapSecret(ns, name, clusterName string, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": data, "format": []byte("cloud-config")},
	}
}

// mdConfig describes a MachineDeployment.
type mdConfig struct {
	Name            string
	Cluster         string
	Replicas        int32
	Template        string // the WasmMachineTemplate
	BootstrapSecret string // spec.template.spec.bootstrap.dataSecretName
	MaxSurge        int32
	MaxUnavailable  int32
	Version         string // optional, e.g. v1.37.2
}

// machineDeployment is a MachineDeployment stamping WasmMachines from a
// WasmMachineTemplate, with bootstrap data from a Secret (no bootstrap
// provider) and a RollingUpdate strategy. Every field CAPI's defaulting
// webhooks would set is set (they do not run here): the cluster-name
// label, replicas, the selector (deployment-name and cluster-name labels)
// and the template's labels to match, the strategy and its maxSurge and
// maxUnavailable; and the Machines' nodeDeletionTimeoutSeconds, which the
// Machine webhook would set on each Machine.
func machineDeployment(ns string, c mdConfig) *clusterv1.MachineDeployment {
	sel := map[string]string{
		clusterv1.MachineDeploymentNameLabel: c.Name,
		clusterv1.ClusterNameLabel:           c.Cluster,
	}
	copyOf := func(m map[string]string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: c.Cluster}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: c.Cluster,
			Replicas:    ptr.To(c.Replicas),
			Selector:    metav1.LabelSelector{MatchLabels: copyOf(sel)},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge:       ptr.To(intstr.FromInt32(c.MaxSurge)),
					MaxUnavailable: ptr.To(intstr.FromInt32(c.MaxUnavailable)),
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: copyOf(sel)},
				Spec: clusterv1.MachineSpec{
					ClusterName: c.Cluster,
					Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(c.BootstrapSecret)},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infraGroup, Kind: "WasmMachineTemplate", Name: c.Template,
					},
					Version:  c.Version,
					Deletion: clusterv1.MachineDeletionSpec{NodeDeletionTimeoutSeconds: ptr.To[int32](10)},
				},
			},
		},
	}
}

// workloadKubeconfig is an admin kubeconfig for the envtest API server,
// the workload cluster of every Cluster.
func workloadKubeconfig(clusterName string) ([]byte, error) {
	cfg := adminCfg
	user := &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile,
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		ca = b
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	name := clusterName + "-admin"
	return clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{clusterName: {Server: host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: user},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: clusterName, AuthInfo: name}},
		CurrentContext: name,
	})
}

// ---- helpers on a running environment ---------------------------------------

func (e *capiEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createCluster creates a Cluster, its WasmCluster (with
// spec.controlPlaneEndpoint if host is set), its E2EControlPlane (the
// control plane faker initializes it once the Cluster's infrastructure is
// provisioned) and its kubeconfig Secret (<name>-kubeconfig, for the
// envtest API server: the ClusterCache connects to it once the Cluster's
// infrastructure is provisioned). It returns the Cluster as created.
func (e *capiEnv) createCluster(name, host string, port int32) *clusterv1.Cluster {
	e.t.Helper()
	e.create(wasmCluster(e.ns, name, host, port))
	e.create(e2eControlPlane(e.ns, name))
	c := capiCluster(e.ns, name)
	e.create(c)
	kc, err := workloadKubeconfig(name)
	if err != nil {
		e.t.Fatal(err)
	}
	e.create(kubeconfig.GenerateSecret(c, kc)) // owned by the Cluster, as CAPI's own
	return c
}

// markWasmClusterProvisioned does what wasmprov's WasmCluster controller
// does: status.initialization.provisioned = true.
func (e *capiEnv) markWasmClusterProvisioned(name string) {
	e.t.Helper()
	e.patchStatus("WasmCluster", name, map[string]any{"initialization": map[string]any{"provisioned": true}})
}

// patchStatus merge-patches the status of an infrastructure.wasmprov.io
// object (WasmCluster, WasmMachine).
func (e *capiEnv) patchStatus(kind, name string, status map[string]any) {
	e.t.Helper()
	e.patchInfra(kind, name, "status", status)
}

// patchSpec merge-patches the spec of an infrastructure.wasmprov.io
// object.
func (e *capiEnv) patchSpec(kind, name string, spec map[string]any) {
	e.t.Helper()
	e.patchInfra(kind, name, "spec", spec)
}

func (e *capiEnv) patchInfra(kind, name, field string, value map[string]any) {
	e.t.Helper()
	e.patch(infraVersion, kind, name, field, value)
}

// patch merge-patches a field (spec, status, ...) of an object; status
// through the status subresource.
func (e *capiEnv) patch(apiVersion, kind, name, field string, value map[string]any) {
	e.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(e.ns)
	u.SetName(name)
	patch, _ := json.Marshal(map[string]any{field: value})
	var err error
	if field == "status" {
		err = e.c.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
	} else {
		err = e.c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		e.t.Fatalf("patching %s %s %s: %v", kind, name, field, err)
	}
}

func (e *capiEnv) getCluster(name string) *clusterv1.Cluster {
	e.t.Helper()
	var c clusterv1.Cluster
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &c); err != nil {
		e.t.Fatal(err)
	}
	return &c
}

func (e *capiEnv) getMD(name string) *clusterv1.MachineDeployment {
	e.t.Helper()
	var md clusterv1.MachineDeployment
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &md); err != nil {
		e.t.Fatal(err)
	}
	return &md
}

func (e *capiEnv) patchMD(name string, patch map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(patch)
	md := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	if err := e.c.Patch(context.Background(), md, client.RawPatch(types.MergePatchType, b)); err != nil {
		e.t.Fatalf("patching MachineDeployment %s: %v", name, err)
	}
}

// scaleMD sets the MachineDeployment's spec.replicas.
func (e *capiEnv) scaleMD(name string, replicas int32) {
	e.t.Helper()
	e.patchMD(name, map[string]any{"spec": map[string]any{"replicas": replicas}})
}

// setMDTemplate points the MachineDeployment at another
// WasmMachineTemplate, which rolls its Machines.
func (e *capiEnv) setMDTemplate(name, template string) {
	e.t.Helper()
	e.patchMD(name, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": infraGroup, "kind": "WasmMachineTemplate", "name": template},
	}}}})
}

// deleteMD deletes the MachineDeployment (CAPI deletes its MachineSets and
// Machines, and the Machines their WasmMachines).
func (e *capiEnv) deleteMD(name string) {
	e.t.Helper()
	md := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	if err := e.c.Delete(context.Background(), md); err != nil {
		e.t.Fatal(err)
	}
}

// mdStatus is a MachineDeployment's replica counts, as CAPI reports them.
type mdStatus struct {
	Spec, Replicas, Ready, Available, UpToDate int32
	// Current: CAPI has seen the MachineDeployment's latest spec
	// (status.observedGeneration == metadata.generation).
	Current bool
	Phase   string
}

func (s mdStatus) String() string {
	return fmt.Sprintf("spec %d, replicas %d, ready %d, available %d, upToDate %d, current %t, phase %q",
		s.Spec, s.Replicas, s.Ready, s.Available, s.UpToDate, s.Current, s.Phase)
}

// settled reports whether the MachineDeployment has n Machines, all up to
// date, ready and available, and CAPI has seen its latest spec.
func (s mdStatus) settled(n int32) bool {
	return s.Current && s.Spec == n && s.Replicas == n && s.Ready == n && s.Available == n && s.UpToDate == n
}

func (e *capiEnv) mdStatus(name string) mdStatus {
	e.t.Helper()
	md := e.getMD(name)
	return mdStatus{
		Spec:      ptr.Deref(md.Spec.Replicas, 0),
		Replicas:  ptr.Deref(md.Status.Replicas, 0),
		Ready:     ptr.Deref(md.Status.ReadyReplicas, 0),
		Available: ptr.Deref(md.Status.AvailableReplicas, 0),
		UpToDate:  ptr.Deref(md.Status.UpToDateReplicas, 0),
		Current:   md.Status.ObservedGeneration == md.Generation,
		Phase:     md.Status.Phase,
	}
}

// machines lists the namespace's CAPI Machines.
func (e *capiEnv) machines() []clusterv1.Machine {
	e.t.Helper()
	var l clusterv1.MachineList
	if err := e.c.List(context.Background(), &l, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// wasmMachines lists the namespace's WasmMachines.
func (e *capiEnv) wasmMachines() []unstructured.Unstructured {
	e.t.Helper()
	var l unstructured.UnstructuredList
	l.SetAPIVersion(infraVersion)
	l.SetKind("WasmMachineList")
	if err := e.c.List(context.Background(), &l, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

// ---- the node faker ---------------------------------------------------------

// nodeCounts is what the node faker did.
type nodeCounts struct {
	Created, Deleted int
}

func (e *capiEnv) nodeCounts() nodeCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nodes
}

// liveNodes counts the namespace's faked Nodes that exist and are not
// being deleted.
func (e *capiEnv) liveNodes() int {
	e.t.Helper()
	var nodes corev1.NodeList
	if err := e.c.List(context.Background(), &nodes, client.MatchingLabels{nodeNamespaceLabel: e.ns}); err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, node := range nodes.Items {
		if node.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n
}

// fakeNodes starts the node faker, the kubelets of the test: for every
// Machine of the namespace with spec.providerID it creates a Node with
// that providerID (named after the Machine, labelled with
// nodeNamespaceLabel) and makes it Ready through the status subresource;
// it deletes the Nodes whose Machine is gone if CAPI has not (CAPI
// deletes a Machine's Node itself when it deletes the Machine). It stops,
// and deletes its Nodes, when the test ends. Calling it again does nothing.
func (e *capiEnv) fakeNodes() {
	e.t.Helper()
	e.mu.Lock()
	started := e.faker
	e.faker = true
	e.mu.Unlock()
	if started {
		return
	}
	e.t.Cleanup(func() { // after the loop has stopped (cleanups run last-in first-out)
		var nodes corev1.NodeList
		if err := e.c.List(context.Background(), &nodes, client.MatchingLabels{nodeNamespaceLabel: e.ns}); err != nil {
			e.t.Errorf("listing the faked nodes: %v", err)
			return
		}
		for i := range nodes.Items {
			if err := e.c.Delete(context.Background(), &nodes.Items[i]); err != nil && !apierrors.IsNotFound(err) {
				e.t.Errorf("deleting node %s: %v", nodes.Items[i].Name, err)
			}
		}
	})
	e.every("node faker", e.syncNodes)
}

// every runs fn every capiFakeInterval until the test ends, logging its
// errors to the CAPI log.
func (e *capiEnv) every(what string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(capiFakeInterval)
		defer t.Stop()
		for {
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(e.log, "%s %s: %v\n", time.Now().Format("15:04:05.000"), what, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

func (e *capiEnv) syncNodes(ctx context.Context) error {
	var machines clusterv1.MachineList
	if err := e.c.List(ctx, &machines, client.InNamespace(e.ns)); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := e.c.List(ctx, &nodes, client.MatchingLabels{nodeNamespaceLabel: e.ns}); err != nil {
		return err
	}
	byID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byID[nodes.Items[i].Spec.ProviderID] = &nodes.Items[i]
	}
	want := map[string]bool{}
	for i := range machines.Items {
		m := &machines.Items[i]
		id := m.Spec.ProviderID
		if id == "" {
			continue
		}
		want[id] = true
		n := byID[id]
		if n == nil {
			if !m.DeletionTimestamp.IsZero() {
				continue // CAPI deleted its Node already, or will not look for one
			}
			var err error
			if n, err = e.createNode(ctx, m); err != nil {
				return err
			}
		}
		if !nodeReady(n) {
			if err := e.readyNode(ctx, n, m); err != nil {
				return err
			}
		}
	}
	for id, n := range byID {
		if want[id] || !n.DeletionTimestamp.IsZero() {
			continue
		}
		if err := e.c.Delete(ctx, n); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		e.mu.Lock()
		e.nodes.Deleted++
		e.mu.Unlock()
	}
	return nil
}

func (e *capiEnv) createNode(ctx context.Context, m *clusterv1.Machine) (*corev1.Node, error) {
	for _, name := range []string{m.Name, m.Name + "-" + rand.String(5)} {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				nodeNamespaceLabel:        e.ns,
				corev1.LabelHostname:      name,
				corev1.LabelOSStable:      "linux",
				corev1.LabelArchStable:    "amd64",
				"e2e.wasmprov.io/machine": m.Name,
			}},
			Spec: corev1.NodeSpec{ProviderID: m.Spec.ProviderID},
		}
		err := e.c.Create(ctx, n)
		if apierrors.IsAlreadyExists(err) {
			continue // another test's Machine of the same name
		}
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.nodes.Created++
		e.mu.Unlock()
		return n, nil
	}
	return nil, fmt.Errorf("no free node name for machine %s", m.Name)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyNode gives the Node the status a healthy kubelet reports: Ready, no
// pressure, node info, the Machine's addresses.
func (e *capiEnv) readyNode(ctx context.Context, n *corev1.Node, m *clusterv1.Machine) error {
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
	}
	version := m.Spec.Version
	if version == "" {
		version = "v1.37.2"
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion: version, OperatingSystem: "linux", Architecture: "amd64",
		OSImage: "wasmprov e2e node faker", ContainerRuntimeVersion: "fake://0", MachineID: string(m.UID),
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.Name}}
	for _, a := range m.Status.Addresses {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(a.Type), Address: a.Address})
	}
	return e.c.Status().Update(ctx, n)
}
