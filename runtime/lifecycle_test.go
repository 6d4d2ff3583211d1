package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/fake/fakeprovider"
	"github.com/wasmprov/wasmprov/examples/hostcalls/hostcallsprovider"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/native"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The tests in this file run every method of the example providers twice:
// through the .wasm compiled from the example's source, and through the
// same provider code loaded natively (runtime/native.Load). Both must produce
// the same transcript, and the transcript must say what the provider is
// supposed to do.

// kubeFixture is a fake clientset with the Secret the hostcalls provider's
// spec references, and PersistentVolumes served by a lister over an
// informer's kind of store, as machine-controller wires them.
type kubeFixture struct {
	client   *kubefake.Clientset
	pvLister listerscorev1.PersistentVolumeLister
}

func newKubeFixture(t testing.TB) *kubeFixture {
	t.Helper()
	pv := func(name, node, handle string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node": node}},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: handle},
			}},
		}
	}
	client := kubefake.New(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "hostcalls"},
		Data: map[string][]byte{"token": []byte("s3cret")}})
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, v := range []*corev1.PersistentVolume{pv("pv-a", "worker-1", "vol-a"), pv("pv-b", "worker-1", "vol-b"), pv("pv-c", "worker-2", "vol-c")} {
		if err := store.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return &kubeFixture{client: client, pvLister: listerscorev1.NewPersistentVolumeLister(store)}
}

func hostcallsSpec(endpoint string, token any) map[string]any {
	spec := map[string]any{"endpoint": endpoint, "size": "large"}
	if token != nil {
		spec["token"] = token
	}
	return map[string]any{"cloudProvider": "hostcalls", "operatingSystem": "ubuntu", "cloudProviderSpec": spec}
}

var secretToken = map[string]any{"secretKeyRef": map[string]any{"namespace": "kube-system", "name": "hostcalls", "key": "token"}}

// describeErr renders an error's class the way the controller sees it.
func describeErr(err error) string {
	if err == nil {
		return "ok"
	}
	if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); ok {
		return fmt.Sprintf("terminal %s: %s", reason, msg)
	}
	if cloudprovidererrors.IsNotFound(err) {
		return "not-found"
	}
	if after, ok := cloudprovidererrors.RetryAfter(err); ok {
		return fmt.Sprintf("retry after %s: %v", after, errors.Unwrap(err))
	}
	return "error: " + err.Error()
}

func describeInstance(inst instance.Instance, err error) string {
	if err != nil {
		return describeErr(err)
	}
	var addrs []string
	for a, t := range inst.Addresses() {
		addrs = append(addrs, a+"="+string(t))
	}
	sort.Strings(addrs)
	return fmt.Sprintf("instance name=%s id=%s providerID=%s status=%s addresses=%v",
		inst.Name(), inst.ID(), inst.ProviderID(), inst.Status(), addrs)
}

func describeMachine(m *clusterv1alpha1.Machine) string {
	return fmt.Sprintf("machine finalizers=%v annotations=%v", m.Finalizers, m.Annotations)
}

// hostcallsLifecycle drives every method of the hostcalls provider and
// returns what happened, step by step.
func hostcallsLifecycle(t *testing.T, p *runtime.Provider, c *fakeCloud, kube *kubeFixture) []string {
	t.Helper()
	c.reset()
	var out []string
	add := func(step, result string) { out = append(out, step+": "+result) }

	m := newMachine("worker-1", "u-1", hostcallsSpec(c.srv.URL, secretToken))
	store := newMachineStore(m)
	store.conflictOnce = true // the first update meets a conflict and is re-applied
	data := &cloud.MachineCreateDeleteData{Updater: store.updater(), PVLister: kube.pvLister}

	spec, err := cloud.SeedProvider(p, nil).AddDefaults(m.Spec)
	add("AddDefaults", describeErr(err)+" value="+string(spec.ProviderSpec.Value.Raw))
	// The seed's Validate gets a spec and no Machine: without being told
	// the Machine's namespace the host lets it read only the policy's
	// namespaces, none here.
	add("Validate without a namespace", describeErr(cloud.SeedProvider(p, nil).Validate(m.Spec)))
	nsCtx := provider.WithMachineNamespace(context.Background(), m.Namespace)
	add("Validate", describeErr(p.Validate(nsCtx, m.Spec, nil)))
	add("Get before Create", describeInstance(cloud.SeedProvider(p, nil).Get(m)))
	add("Create", describeInstance(cloud.SeedProvider(p, nil).Create(m, data, "#cloud-config\n")))
	stored := store.get("worker-1")
	add("after Create", describeMachine(stored))
	add("Get", describeInstance(cloud.SeedProvider(p, nil).Get(stored)))
	cfg, name, err := cloud.SeedProvider(p, nil).GetCloudConfig(m.Spec)
	add("GetCloudConfig", fmt.Sprintf("%s config=%q name=%q", describeErr(err), cfg, name))
	labels, err := cloud.SeedProvider(p, nil).MachineMetricsLabels(stored)
	add("MachineMetricsLabels", fmt.Sprintf("%s %v", describeErr(err), labels))
	add("MigrateUID", describeErr(cloud.SeedProvider(p, nil).MigrateUID(stored, "u-2")))
	migrated := stored.DeepCopy()
	migrated.UID = "u-2"
	add("Get after MigrateUID", describeInstance(cloud.SeedProvider(p, nil).Get(migrated)))
	store.machines["worker-1"].UID = "u-2"
	add("Delete", describeErr(cloud.SeedProvider(p, nil).Delete(store.get("worker-1"), data)))
	add("after Delete", describeMachine(store.get("worker-1")))
	add("Get after Delete", describeInstance(cloud.SeedProvider(p, nil).Get(migrated)))
	add("Delete again", describeErr(cloud.SeedProvider(p, nil).Delete(store.get("worker-1"), data)))
	add("cloud", fmt.Sprintf("instances=%d conflicts=%d", c.count(), store.conflicts))

	bad := newMachine("worker-2", "u-3", hostcallsSpec(c.srv.URL, "wrong-token"))
	add("Validate wrong token", describeErr(p.Validate(nsCtx, bad.Spec, nil)))
	noEndpoint := newMachine("worker-2", "u-3", map[string]any{"cloudProvider": "hostcalls", "cloudProviderSpec": map[string]any{}})
	add("Validate no endpoint", describeErr(cloud.SeedProvider(p, nil).Validate(noEndpoint.Spec)))
	c.mu.Lock()
	c.throttle = 1
	c.mu.Unlock()
	add("Get throttled", describeInstance(cloud.SeedProvider(p, nil).Get(m)))
	return out
}

func TestHostcallsWasmAndNativeAgree(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud(t, "s3cret")
	kube := newKubeFixture(t)
	policy := runtime.Policy{AllowedHosts: []string{c.host()}, AllowInsecureHTTP: true}
	rt := newRuntime(t, runtime.WithKubernetesClient(kube.client))

	wasm, err := rt.Load(ctx, testguest.Build(t, "examples/hostcalls"), runtime.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	inProcess, err := native.Load(rt, "hostcalls", hostcallsprovider.Provider{},
		abi.CapHTTP|abi.CapMachineUpdate|abi.CapPVList|abi.CapConfigVar, runtime.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	fromWasm := hostcallsLifecycle(t, wasm, c, kube)
	fromNative := hostcallsLifecycle(t, inProcess, c, kube)
	if got, want := strings.Join(fromWasm, "\n"), strings.Join(fromNative, "\n"); got != want {
		t.Fatalf("wasm and native disagree:\n--- wasm\n%s\n--- native\n%s", got, want)
	}

	want := map[string]string{
		"Validate without a namespace": `error: provider "hostcalls": Validate: resolving token: host function config_var: secretKeyRef kube-system/hostcalls: namespace "kube-system" is neither the machine's (unknown in Validate) nor allowed by the policy`,
		"Validate":                     "ok",
		"Get before Create":            "not-found",
		"Create":                       "instance name=worker-1 id=1 providerID=hostcalls://1 status=running addresses=[10.0.0.1=InternalIP]",
		"after Create":                 "machine finalizers=[hostcalls.wasmprov.io/cleanup] annotations=map[hostcalls.wasmprov.io/instance-id:1 touched-by:someone-else wasmprov.io/provider-finalizers:hostcalls.wasmprov.io/cleanup]",
		"Get":                          "instance name=worker-1 id=1 providerID=hostcalls://1 status=running addresses=[10.0.0.1=InternalIP]",
		"GetCloudConfig":               fmt.Sprintf("ok config=%q name=%q", "endpoint = "+c.srv.URL+"\n", "hostcalls"),
		"MachineMetricsLabels":         "ok map[region: size:large]",
		"MigrateUID":                   "ok",
		"Get after MigrateUID":         "instance name=worker-1 id=1 providerID=hostcalls://1 status=running addresses=[10.0.0.1=InternalIP]",
		"Delete":                       "ok",
		"after Delete":                 "machine finalizers=[] annotations=map[hostcalls.wasmprov.io/instance-id:1 touched-by:someone-else]",
		"Get after Delete":             "not-found",
		"Delete again":                 "ok",
		"cloud":                        "instances=0 conflicts=1",
		"Validate wrong token":         "terminal InvalidConfiguration: GET /v1/ping: HTTP 401",
		"Validate no endpoint":         "terminal InvalidConfiguration: cloudProviderSpec.endpoint is required",
		"Get throttled":                "retry after 7s: GET /v1/instances/u-1: rate limited (retry after 7s)",
	}
	for _, line := range fromWasm {
		step, result, _ := strings.Cut(line, ": ")
		if w, ok := want[step]; ok && result != w {
			t.Errorf("%s:\n got %s\nwant %s", step, result, w)
		}
		delete(want, step)
	}
	if !strings.Contains(fromWasm[0], `"region":"local"`) {
		t.Errorf("AddDefaults did not default the region: %s", fromWasm[0])
	}
	for step := range want {
		t.Errorf("step %q missing from transcript", step)
	}
}

func TestFakeWasmAndNativeAgree(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	wasm, err := rt.Load(ctx, testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	inProcess, err := native.Load(rt, "fake", fakeprovider.Provider{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := func(p cloud.Provider) []string {
		pass := newMachine("m1", "uid-1", map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": true}})
		fail := newMachine("m2", "uid-2", map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": false}})
		var out []string
		spec, err := p.AddDefaults(pass.Spec)
		out = append(out, "AddDefaults "+describeErr(err)+" "+string(spec.ProviderSpec.Value.Raw))
		out = append(out, "Validate pass "+describeErr(p.Validate(pass.Spec)))
		out = append(out, "Validate fail "+describeErr(p.Validate(fail.Spec)))
		out = append(out, "Get "+describeInstance(p.Get(pass)))
		cfg, name, err := p.GetCloudConfig(pass.Spec)
		out = append(out, fmt.Sprintf("GetCloudConfig %s %q %q", describeErr(err), cfg, name))
		out = append(out, "Create "+describeInstance(p.Create(pass, &cloud.MachineCreateDeleteData{}, "userdata")))
		labels, err := p.MachineMetricsLabels(pass)
		out = append(out, fmt.Sprintf("MachineMetricsLabels %s %v", describeErr(err), labels))
		out = append(out, "MigrateUID "+describeErr(p.MigrateUID(pass, "uid-9")))
		out = append(out, "Delete "+describeErr(p.Delete(pass, &cloud.MachineCreateDeleteData{})))
		return out
	}
	got, want := strings.Join(run(cloud.SeedProvider(wasm, nil)), "\n"), strings.Join(run(cloud.SeedProvider(inProcess, nil)), "\n")
	if got != want {
		t.Fatalf("wasm and native disagree:\n--- wasm\n%s\n--- native\n%s", got, want)
	}
	expect := `AddDefaults ok {"cloudProvider":"fake","cloudProviderSpec":{"passValidation":true}}
Validate pass ok
Validate fail error: provider "fake": Validate: failing validation as requested
Get instance name=m1 id=uid-1 providerID=fake://uid-1 status=running addresses=[]
GetCloudConfig ok "" ""
Create instance name=m1 id=uid-1 providerID=fake://uid-1 status=running addresses=[]
MachineMetricsLabels ok map[size:fake]
MigrateUID ok
Delete ok`
	if got != expect {
		t.Fatalf("fake transcript:\n%s\nwant:\n%s", got, expect)
	}
}

func TestContextCancelsCall(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.LoadBytes(ctx, "loop", readFixture(t, "loop"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m", "u", map[string]any{})
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.Validate(cctx, m.Spec, nil)
	if !errors.Is(err, runtime.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout error, got %v", err)
	}
	if runtime.ErrorClass(err) != runtime.ClassTimeout {
		t.Fatalf("class = %q", runtime.ErrorClass(err))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the runaway guest was stopped only after %s", d)
	}
	// The looping instance was discarded; the provider keeps serving.
	if _, err := cloud.SeedProvider(p, nil).Get(m); err != nil {
		t.Fatalf("Get after timeout: %v", err)
	}
	st := p.PoolStats()
	inUse, discarded := st.InUse, st.Discarded
	if discarded != 1 || inUse != 0 {
		t.Fatalf("discarded=%d inUse=%d, want 1 and 0", discarded, inUse)
	}
}
