package cloudprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cloudprovidererrors "k8c.io/machine-controller/pkg/cloudprovider/errors"
	"k8c.io/machine-controller/pkg/cloudprovider/instance"
	"k8c.io/machine-controller/pkg/cloudprovider/provider/hetznerwasm"
	cloudprovidertypes "k8c.io/machine-controller/pkg/cloudprovider/types"
	"k8c.io/machine-controller/sdk/apis/cluster/common"
	clusterv1alpha1 "k8c.io/machine-controller/sdk/apis/cluster/v1alpha1"
	"k8c.io/machine-controller/sdk/providerconfig"
)

// The generated New has the signature the providers map wants, on
// machine-controller's own types.
var _ cloudprovidertypes.Provider = hetznerwasm.New(nil)

const namespace = "kube-system"

// resolver stands in for machine-controller's ConfigVarResolver: it reads
// Secrets through the client and counts its reads, so the test sees which
// calls config_var served through it.
type resolver struct {
	client ctrlruntimeclient.Client
	reads  atomic.Int32
}

var _ providerconfig.ConfigVarResolver = (*resolver)(nil)

func (r *resolver) GetStringValue(cv providerconfig.ConfigVarString) (string, error) {
	if cv.Value != "" {
		return cv.Value, nil
	}
	ref := cv.SecretKeyRef
	if ref.Name == "" {
		return "", errors.New("resolver: only secretKeyRef is supported here")
	}
	r.reads.Add(1)
	var s corev1.Secret
	if err := r.client.Get(context.Background(), types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return "", err
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
	}
	return string(v), nil
}

func (r *resolver) GetDurationValue(providerconfig.ConfigVarString) (time.Duration, error) {
	return 0, errors.New("resolver: not used")
}

func (r *resolver) GetDurationValueOrDefault(providerconfig.ConfigVarString, time.Duration) (time.Duration, error) {
	return 0, errors.New("resolver: not used")
}

func (r *resolver) GetStringValueOrEnv(cv providerconfig.ConfigVarString, _ string) (string, error) {
	return r.GetStringValue(cv)
}

func (r *resolver) GetBoolValue(providerconfig.ConfigVarBool) (bool, bool, error) {
	return false, false, errors.New("resolver: not used")
}

func (r *resolver) GetBoolValueOrEnv(providerconfig.ConfigVarBool, string) (bool, error) {
	return false, errors.New("resolver: not used")
}

func machine(t *testing.T, name, uid string, cloudProviderSpec map[string]any) *clusterv1alpha1.Machine {
	t.Helper()
	raw, err := json.Marshal(map[string]any{
		"cloudProvider":       "hetzner-wasm",
		"cloudProviderSpec":   cloudProviderSpec,
		"operatingSystem":     "ubuntu",
		"operatingSystemSpec": map[string]any{"distUpgradeOnBoot": false},
		"sshPublicKeys":       []string{},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(uid)}}
	m.Spec.Name = name
	m.Spec.Versions.Kubelet = "1.33.0"
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

func cloudProviderSpec(t *testing.T, spec clusterv1alpha1.MachineSpec) map[string]any {
	t.Helper()
	var v struct {
		CloudProviderSpec map[string]any `json:"cloudProviderSpec"`
	}
	if err := json.Unmarshal(spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v.CloudProviderSpec
}

// TestLifecycle drives the provider the way machine-controller does,
// through its providers map, against the Hetzner API simulator.
func TestLifecycle(t *testing.T) {
	if os.Getenv(hetznerwasm.ModuleEnv) == "" {
		t.Fatalf("$%s is not set: run this through wasmprov's cmd/wasmprov TestMachineControllerDropIn", hetznerwasm.ModuleEnv)
	}
	sim, err := hcloudsim.Start(hcloudsim.Options{BootDuration: 300 * time.Millisecond, ActionDuration: 100 * time.Millisecond}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })

	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hetzner", Namespace: namespace}, Data: map[string][]byte{"token": []byte("sim-token")}}
	client := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret).Build()
	cvr := &resolver{client: client}
	ctx := context.Background()
	log := zap.NewNop().Sugar()

	p, err := ForProvider(hetznerwasm.CloudProvider, cvr)
	if err != nil {
		t.Fatal(err)
	}

	// A module that is not there fails the call, and is not remembered:
	// once it is, the next call loads it.
	modulePath := os.Getenv(hetznerwasm.ModuleEnv)
	os.Setenv(hetznerwasm.ModuleEnv, filepath.Join(t.TempDir(), "missing.wasm"))
	_, err = p.AddDefaults(log, clusterv1alpha1.MachineSpec{})
	os.Setenv(hetznerwasm.ModuleEnv, modulePath)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("AddDefaults without a module: %v, want a not-exist error", err)
	}

	token := map[string]any{"secretKeyRef": map[string]any{"namespace": namespace, "name": "hetzner", "key": "token"}}
	m := machine(t, "dropin", "uid-dropin-1", map[string]any{
		"token": token, "serverType": "cx22", "datacenter": "hel1-dc2", "endpoint": sim.URL, "labels": map[string]any{"cluster": "dropin"},
	})

	// AddDefaults: the legacy datacenter becomes a location, the image
	// follows the operating system; the rest of the Machine survives.
	spec, err := p.AddDefaults(log, m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	cps := cloudProviderSpec(t, spec)
	if cps["location"] != "hel1" || cps["datacenter"] != nil || cps["image"] != "ubuntu-24.04" || cps["serverType"] != "cx22" {
		t.Fatalf("AddDefaults: cloudProviderSpec %v", cps)
	}
	if spec.Name != m.Spec.Name || spec.Versions.Kubelet != "1.33.0" {
		t.Fatalf("AddDefaults lost fields: %+v", spec)
	}
	m.Spec = spec

	// Validate reads the token through the ConfigVarResolver (no client
	// in Validate's arguments).
	if err := p.Validate(ctx, log, m.Spec); err != nil {
		t.Fatal(err)
	}
	if cvr.reads.Load() == 0 {
		t.Fatal("Validate did not read the token through the ConfigVarResolver")
	}
	// A terminal error arrives as machine-controller's TerminalError.
	bad := machine(t, "bad", "uid-bad", map[string]any{"token": token, "location": "hel1", "endpoint": sim.URL})
	err = p.Validate(ctx, log, bad.Spec)
	if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); !ok || reason != common.InvalidConfigurationMachineError || msg == "" {
		t.Fatalf("Validate without serverType: %v (terminal %v, reason %q)", err, ok, reason)
	}

	if err := client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	data := &cloudprovidertypes.ProviderData{Ctx: ctx, Client: client, Update: cloudprovidertypes.GetMachineUpdater(ctx, client)}

	// Get before Create: machine-controller's ErrInstanceNotFound.
	if _, err := p.Get(ctx, log, m, data); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Fatalf("Get before Create: %v, want ErrInstanceNotFound", err)
	}

	// Create: the token now comes through the client, the finalizer and
	// the server ID through the updater, and the controller's Machine is
	// changed in place to what was stored.
	readsBefore := cvr.reads.Load()
	inst, err := p.Create(ctx, log, m, data, "#cloud-config\nhostname: dropin")
	if err != nil {
		t.Fatal(err)
	}
	if cvr.reads.Load() != readsBefore {
		t.Fatal("Create read the token through the ConfigVarResolver, not the ProviderData's client")
	}
	servers := sim.Servers()
	if len(servers) != 1 || servers[0].Labels[hzprovider.MachineUIDLabel] != "uid-dropin-1" {
		t.Fatalf("servers after Create: %+v", servers)
	}
	id := fmt.Sprint(servers[0].ID)
	if inst.ID() != id || inst.ProviderID() != "hcloud://"+id || inst.Name() != "dropin" || inst.Status() != instance.StatusCreating {
		t.Fatalf("Create: instance %s %s %s %s, server %+v", inst.ID(), inst.ProviderID(), inst.Name(), inst.Status(), servers[0])
	}
	var stored clusterv1alpha1.Machine
	if err := client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "dropin"}, &stored); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stored.Finalizers, hzprovider.Finalizer) || stored.Annotations[hzprovider.ServerIDAnnotation] != id {
		t.Fatalf("stored Machine after Create: finalizers %v, annotations %v", stored.Finalizers, stored.Annotations)
	}
	if m.ResourceVersion != stored.ResourceVersion || m.Annotations[hzprovider.ServerIDAnnotation] != id {
		t.Fatalf("the controller's Machine was not updated in place: resourceVersion %q (stored %q), annotations %v",
			m.ResourceVersion, stored.ResourceVersion, m.Annotations)
	}

	// Get: creating, then running, with addresses of upstream's type.
	deadline := time.Now().Add(15 * time.Second)
	for inst.Status() != instance.StatusRunning && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if inst, err = p.Get(ctx, log, m, data); err != nil {
			t.Fatal(err)
		}
	}
	if inst.Status() != instance.StatusRunning {
		t.Fatalf("Get: status %q, want running", inst.Status())
	}
	if addrs := inst.Addresses(); addrs[servers[0].IPv4] != corev1.NodeExternalIP {
		t.Fatalf("Get: addresses %v, want %s external", addrs, servers[0].IPv4)
	}
	labels, err := p.MachineMetricsLabels(m)
	if err != nil || labels["size"] != "cx22" || labels["location"] != "hel1" {
		t.Fatalf("MachineMetricsLabels = %v, %v", labels, err)
	}

	// MigrateUID relabels the server (done while it exists, so that the
	// migration is seen); Get then finds it by the new UID only.
	if err := p.MigrateUID(ctx, log, m, "uid-dropin-2"); err != nil {
		t.Fatal(err)
	}
	if s := sim.Servers(); len(s) != 1 || s[0].Labels[hzprovider.MachineUIDLabel] != "uid-dropin-2" {
		t.Fatalf("servers after MigrateUID: %+v", s)
	}
	if _, err := p.Get(ctx, log, m, data); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Fatalf("Get by the old UID after MigrateUID: %v", err)
	}
	m.UID = "uid-dropin-2"
	if inst, err := p.Get(ctx, log, m, data); err != nil || inst.ID() != id {
		t.Fatalf("Get by the new UID: %v", err)
	}

	// Cleanup: false while deletion runs (zero or more times), then true;
	// the server is gone and the finalizer removed.
	var pending int
	deadline = time.Now().Add(30 * time.Second)
	for {
		done, err := p.Cleanup(ctx, log, m, data)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		pending++
		if time.Now().After(deadline) {
			t.Fatalf("Cleanup still not done after %d calls", pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("Cleanup returned false %d time(s) before true", pending)
	if s := sim.Servers(); len(s) != 0 {
		t.Fatalf("servers after Cleanup: %+v", s)
	}
	if err := client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "dropin"}, &stored); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(stored.Finalizers, hzprovider.Finalizer) || slices.Contains(m.Finalizers, hzprovider.Finalizer) {
		t.Fatalf("finalizer left after Cleanup: stored %v, controller's copy %v", stored.Finalizers, m.Finalizers)
	}

	if err := p.SetMetricsForMachines(clusterv1alpha1.MachineList{Items: []clusterv1alpha1.Machine{*m}}); err != nil {
		t.Fatal(err)
	}
}
