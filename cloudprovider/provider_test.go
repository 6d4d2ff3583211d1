package cloudprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloudprovider"
	cloudprovidertypes "github.com/wasmprov/wasmprov/cloudprovider/types"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	wprovider "github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/native"
	"github.com/wasmprov/wasmprov/runtime/registry"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// One interface behind both contracts: a loaded module and a registry
// Handle are provider.Interface, and each contract is an adapter over it.
// (One Go type cannot be both contracts: their methods share names and
// differ in signature.)
var (
	_ wprovider.Interface                = (*runtime.Provider)(nil)
	_ wprovider.Interface                = (*registry.Handle)(nil)
	_ func() cloud.Provider              = func() cloud.Provider { return cloud.SeedProvider((*runtime.Provider)(nil), nil) }
	_ func() cloudprovidertypes.Provider = func() cloudprovidertypes.Provider { return cloudprovider.New((*registry.Handle)(nil)) }
)

const finalizer = "probe.wasmprov.io/cleanup"

// probe is a guest-SDK provider that uses every host function the
// current contract's arguments feed: config_var (the Secret through
// ProviderData.Client), pv_list (the client's PersistentVolumes),
// machine_update (ProviderData.Update) and log (the zap logger). It runs
// natively, through the same host functions a wasm guest imports.
type probe struct{}

func (probe) token(ctx context.Context, s provider.MachineSpec) (string, error) {
	var spec struct {
		Token json.RawMessage `json:"token"`
	}
	cfg, err := provider.DecodeConfig(s)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(cfg.CloudProviderSpec, &spec); err != nil {
		return "", provider.Terminal(provider.InvalidConfiguration, "%v", err)
	}
	return provider.ConfigVarString(ctx, spec.Token, "")
}

func (probe) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

func (p probe) Validate(ctx context.Context, s provider.MachineSpec) error {
	tok, err := p.token(ctx, s)
	if err != nil {
		return err
	}
	provider.Logger(ctx).Info("validated", "tokenLength", len(tok))
	return nil
}

func (probe) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	if !m.HasFinalizer(finalizer) {
		return nil, provider.ErrInstanceNotFound
	}
	return &provider.Instance{Name: m.Name, ID: "id-" + m.UID, Status: provider.StatusRunning}, nil
}

func (probe) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (p probe) Create(ctx context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	tok, err := p.token(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	pvs, err := provider.ListPersistentVolumes(ctx, "node="+m.Name)
	if err != nil {
		return nil, err
	}
	if m, err = provider.AddFinalizer(ctx, finalizer); err != nil {
		return nil, err
	}
	provider.Logger(ctx).Info("created", "volumes", len(pvs), "token", tok == "s3cret")
	return &provider.Instance{Name: m.Name, ID: "id-" + m.UID, Status: provider.StatusRunning}, nil
}

func (probe) Delete(ctx context.Context, m *provider.Machine) error {
	if m.HasFinalizer(finalizer) {
		_, err := provider.RemoveFinalizer(ctx, finalizer)
		return err
	}
	return nil
}

func (probe) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"size": "s"}, nil
}

func (probe) MigrateUID(context.Context, *provider.Machine, string) error { return nil }

func scheme(t *testing.T) *k8sruntime.Scheme {
	t.Helper()
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func machine(name string) *clusterv1alpha1.Machine {
	value, _ := json.Marshal(map[string]any{
		"cloudProvider": "probe",
		"cloudProviderSpec": map[string]any{"token": map[string]any{
			"secretKeyRef": map[string]any{"namespace": "kube-system", "name": "probe", "key": "token"}}},
	})
	return &clusterv1alpha1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cluster.k8s.io/v1alpha1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: "uid-" + "1"},
		Spec: clusterv1alpha1.MachineSpec{ProviderSpec: clusterv1alpha1.ProviderSpec{
			Value: &k8sruntime.RawExtension{Raw: value}}},
	}
}

// fixture is a controller-runtime fake client holding the Secret, two
// PersistentVolumes of worker-1 and the Machine, and an observed zap
// logger with a field of the caller's.
type fixture struct {
	client ctrlruntimeclient.Client
	log    *zap.SugaredLogger
	logs   *observer.ObservedLogs
	data   *cloudprovidertypes.ProviderData
}

func newFixture(t *testing.T, m *clusterv1alpha1.Machine) *fixture {
	pv := func(name string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node": "worker-1"}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "probe"}, Data: map[string][]byte{"token": []byte("s3cret")}},
		pv("pv-a"), pv("pv-b"), m.DeepCopy(),
	).Build()
	core, logs := observer.New(zapcore.DebugLevel)
	ctx := context.Background()
	return &fixture{client: c, logs: logs, log: zap.New(core).Sugar().With("controller", "machine"),
		data: &cloudprovidertypes.ProviderData{Ctx: ctx, Client: c, Update: cloudprovidertypes.GetMachineUpdater(ctx, c)}}
}

func loadProbe(t *testing.T, policy runtime.Policy) *runtime.Provider {
	t.Helper()
	p, err := native.Load(testhost.NewRuntime(t), "probe", probe{},
		abi.CapConfigVar|abi.CapPVList|abi.CapMachineUpdate, runtime.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLifecycleThroughProviderData(t *testing.T) {
	ctx := context.Background()
	m := machine("worker-1")
	f := newFixture(t, m)
	// Validate has no Machine, so no namespace: the policy names the
	// Secret's, as an operator of machine-controller (Machines and the
	// Hetzner token both in kube-system) would.
	p := cloudprovider.New(loadProbe(t, runtime.Policy{AllowedSecretNamespaces: []string{"kube-system"}}),
		cloudprovider.WithObjectReader(secretsOf(f.client)))

	spec, err := p.AddDefaults(f.log, m.Spec)
	if err != nil || string(spec.ProviderSpec.Value.Raw) != string(m.Spec.ProviderSpec.Value.Raw) {
		t.Fatalf("AddDefaults: %v", err)
	}
	if err := p.Validate(ctx, f.log, m.Spec); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if _, err := p.Get(ctx, f.log, m, f.data); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Fatalf("Get before Create: %v, want ErrInstanceNotFound", err)
	}
	// machine-controller's logger for a call already names the Machine and
	// the provider; the host must not add them again.
	callLog := f.log.With("machine", "kube-system/worker-1", "provider", "probe")
	inst, err := p.Create(ctx, callLog, m, f.data, "#cloud-config")
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if inst.ID() != "id-uid-1" {
		t.Errorf("Create: id %q", inst.ID())
	}
	// Upstream's updater updates the Machine it is given in place.
	var stored clusterv1alpha1.Machine
	if err := f.client.Get(ctx, ctrlruntimeclient.ObjectKeyFromObject(m), &stored); err != nil {
		t.Fatal(err)
	}
	if !hasFinalizer(&stored, finalizer) || !hasFinalizer(m, finalizer) {
		t.Errorf("finalizer: stored %v, caller's %v; want it on both", stored.Finalizers, m.Finalizers)
	}
	if got := f.logs.FilterMessage("created").All(); len(got) != 1 {
		t.Fatalf("guest log lines on the caller's zap logger: %v", f.logs.All())
	} else if fields := got[0].ContextMap(); fields["controller"] != "machine" || fields["provider"] != "probe" ||
		fields["method"] != "Create" || fields["machine"] != "kube-system/worker-1" ||
		fields["guest.volumes"] != int64(2) || fields["guest.token"] != true {
		t.Errorf("log line fields %v: want the caller's, the host's and the guest's (2 volumes of worker-1, the Secret's token)", fields)
	} else {
		seen := map[string]int{}
		for _, f := range got[0].Context {
			seen[f.Key]++
		}
		for _, k := range []string{"machine", "provider", "method"} {
			if seen[k] != 1 {
				t.Errorf("field %q appears %d times on the guest's line, want once", k, seen[k])
			}
		}
	}
	if _, err := p.Get(ctx, f.log, m, f.data); err != nil {
		t.Errorf("Get: %v", err)
	}
	if labels, err := p.MachineMetricsLabels(m); err != nil || labels["size"] != "s" {
		t.Errorf("MachineMetricsLabels: %v %v", labels, err)
	}
	if err := p.MigrateUID(ctx, f.log, m, "uid-2"); err != nil {
		t.Errorf("MigrateUID: %v", err)
	}
	done, err := p.Cleanup(ctx, f.log, m, f.data)
	if err != nil || !done {
		t.Fatalf("Cleanup: %v, %v", done, err)
	}
	if hasFinalizer(m, finalizer) {
		t.Errorf("Cleanup left the finalizer: %v", m.Finalizers)
	}
	if err := p.SetMetricsForMachines(clusterv1alpha1.MachineList{Items: []clusterv1alpha1.Machine{*m}}); err != nil {
		t.Errorf("SetMetricsForMachines: %v", err)
	}
}

func TestNilLoggerAndProviderData(t *testing.T) {
	ctx := context.Background()
	m := machine("worker-1")
	p := cloudprovider.New(loadProbe(t, runtime.Policy{}))
	// No logger: the runtime's. No ProviderData: no updater, no client,
	// and no runtime Kubernetes client either — clear errors, no panic.
	_, err := p.Create(ctx, nil, m, nil, "")
	if err == nil || !strings.Contains(err.Error(), "no Kubernetes client configured to read secret kube-system/probe") {
		t.Errorf("Create without ProviderData: %v", err)
	}
	_, err = p.Create(ctx, nil, m, &cloudprovidertypes.ProviderData{Client: newFixture(t, m).client}, "")
	if err == nil || !strings.Contains(err.Error(), "machine_update is only available") {
		t.Errorf("Create without an updater: %v", err)
	}
	if done, err := p.Cleanup(ctx, nil, m, nil); err != nil || !done {
		t.Errorf("Cleanup of a Machine without the finalizer: %v, %v", done, err)
	}
	if _, err := p.Get(ctx, nil, nil, nil); !errors.Is(err, cloudprovider.ErrNilMachine) {
		t.Errorf("Get(nil): %v", err)
	}
	if _, err := p.Cleanup(ctx, nil, nil, nil); !errors.Is(err, cloudprovider.ErrNilMachine) {
		t.Errorf("Cleanup(nil): %v", err)
	}
}

func TestClientErrorsReachTheGuest(t *testing.T) {
	ctx := context.Background()
	m := machine("worker-1")
	f := newFixture(t, m)
	p := cloudprovider.New(loadProbe(t, runtime.Policy{}))

	// An API server that fails to answer: FAILED with machine-controller's
	// wording (worth retrying), through the guest's error.
	failing := &cloudprovidertypes.ProviderData{Update: f.data.Update, Client: interceptor.NewClient(f.client.(ctrlruntimeclient.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c ctrlruntimeclient.WithWatch, key ctrlruntimeclient.ObjectKey, obj ctrlruntimeclient.Object, opts ...ctrlruntimeclient.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return apierrors.NewServiceUnavailable("etcd is down")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})}
	_, err := p.Create(ctx, f.log, m, failing, "")
	if err == nil || !strings.Contains(err.Error(), "error retrieving secret 'probe' from namespace 'kube-system': etcd is down") {
		t.Errorf("failing API server: %v", err)
	}
	// A Secret that does not exist: NOT_FOUND, a person must create it.
	if err := f.client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "probe"}}); err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(ctx, f.log, m, f.data, "")
	if err == nil || !strings.Contains(err.Error(), "secret 'probe' not found in namespace 'kube-system'") {
		t.Errorf("missing Secret: %v", err)
	}
	// A Secret in another namespace than the Machine's stays out of
	// reach whoever reads it: the host decides, not the client.
	other := machine("worker-1")
	other.Namespace = "team-a"
	_, err = p.Create(ctx, f.log, other, f.data, "")
	if err == nil || !strings.Contains(err.Error(), `namespace "kube-system" is neither the machine's (team-a)`) {
		t.Errorf("Secret of another namespace: %v", err)
	}
}

func TestCleanupInProgress(t *testing.T) {
	ctx := context.Background()
	calls := 0
	rt := testhost.NewRuntime(t)
	p, err := rt.LoadFunc("async", abi.CapAsyncDelete, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m != abi.MethodDelete {
			return abi.StatusOK
		}
		calls++
		if calls < 3 {
			return abi.StatusInProgress
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	cp := cloudprovider.New(p)
	var got []string
	for range 3 {
		done, err := cp.Cleanup(ctx, nil, machine("w"), nil)
		got = append(got, fmt.Sprint(done, err))
	}
	if want := "false <nil>,false <nil>,true <nil>"; strings.Join(got, ",") != want {
		t.Errorf("Cleanup answered %s, want %s", strings.Join(got, ","), want)
	}
}

func TestWasmGuestOnBothViews(t *testing.T) {
	// The fake example compiled to wasm, on the engine WASMPROV_ENGINE
	// names: one module, two contracts, one pool.
	ctx := context.Background()
	rt := testhost.NewRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	m := machine("worker-1")
	value, _ := json.Marshal(map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": true}})
	m.Spec.ProviderSpec.Value.Raw = value
	current := cloudprovider.New(p)
	f := newFixture(t, m)
	if err := current.Validate(ctx, f.log, m.Spec); err != nil {
		t.Fatalf("current Validate: %v", err)
	}
	seed := cloud.SeedProvider(p, nil)
	if err := seed.Validate(m.Spec); err != nil {
		t.Fatalf("seed Validate: %v", err)
	}
	inst, err := current.Create(ctx, f.log, m, f.data, "")
	if err != nil {
		t.Fatalf("current Create: %v", err)
	}
	seedInst, err := seed.Get(m)
	if err != nil || seedInst.ID() != inst.ID() {
		t.Fatalf("seed Get after current Create: %v %v", seedInst, err)
	}
	if done, err := current.Cleanup(ctx, f.log, m, f.data); err != nil || !done {
		t.Errorf("Cleanup: %v %v", done, err)
	}
	if st := p.PoolStats(); st.Created < 1 || st.Created > int64(p.Policy().PoolSize) {
		t.Errorf("pool %+v: both views must share the provider's pool", st)
	}
}

func hasFinalizer(m *clusterv1alpha1.Machine, f string) bool {
	for _, x := range m.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// secretsOf reads Secrets with a controller-runtime client, for
// WithObjectReader: the reader of calls without ProviderData.
func secretsOf(c ctrlruntimeclient.Client) wprovider.ObjectReader { return clientReader{c} }

type clientReader struct{ c ctrlruntimeclient.Client }

func (r clientReader) SecretKey(ctx context.Context, ns, name, key string) (string, error) {
	var s corev1.Secret
	if err := r.c.Get(ctx, ctrlruntimeclient.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		return "", err
	}
	v, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("no key %s: %w", key, wprovider.ErrKeyNotFound)
	}
	return string(v), nil
}

func (r clientReader) ConfigMapKey(context.Context, string, string, string) (string, error) {
	return "", errors.New("no ConfigMaps here")
}

// A Delete answering NOT_FOUND (the SPEC asks for OK) is nothing left to
// delete for machine-controller: Cleanup is done, the finalizer can go.
func TestCleanupOfAMissingInstanceIsDone(t *testing.T) {
	p, err := testhost.NewRuntime(t).LoadFunc("gone", 0, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m == abi.MethodDelete {
			h.SetError("", "no such server", 0)
			return abi.StatusNotFound
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := cloudprovider.New(p).Cleanup(context.Background(), nil, machine("w"), nil); !done || err != nil {
		t.Errorf("Cleanup = %v, %v; want true, nil", done, err)
	}
	// runtime.Provider.Delete keeps the guest's answer, for conformance to see.
	if err := p.Delete(context.Background(), machine("w"), nil); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Errorf("Delete = %v, want ErrInstanceNotFound", err)
	}
}
