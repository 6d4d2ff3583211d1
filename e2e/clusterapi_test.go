//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The Cluster API e2e: Cluster API's own core controllers (in this test
// binary, clusterapi_env_test.go), `wasmprov controller -cluster-api` as a
// separate process with exactly controller/deploy/rbac.yaml, the Hetzner
// provider against the simulator. The WasmMachineTemplates carry the very
// providerSpec the machine-controller e2e's Machines carry (w.machine).

// capiWorld is a world (namespace, simulator, providers directory) with
// Cluster API running in its namespace and one Cluster.
type capiWorld struct {
	*world
	capi *capiEnv
}

const (
	capiClusterName = "demo"
	bootstrapData   = "#cloud-config\nruncmd: [kubeadm join]\n"
)

func newCAPIWorld(t *testing.T) *capiWorld {
	t.Helper()
	w := &capiWorld{world: newWorld(t)}
	w.capi = startClusterAPI(t, w.ns)
	w.capi.fakeNodes()
	u, err := url.Parse(adminCfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	w.capi.createCluster(capiClusterName, host, int32(port))
	w.capi.create(bootstrapSecret(w.ns, "bootstrap", capiClusterName, []byte(bootstrapData)))
	return w
}

// template creates a WasmMachineTemplate with the machine-controller
// e2e's providerSpec, extra overriding cloudProviderSpec fields.
func (w *capiWorld) template(name string, extra map[string]any) {
	w.t.Helper()
	raw := w.machine("unused", extra).Spec.ProviderSpec.Value.Raw
	tmpl, err := wasmMachineTemplate(w.ns, name, json.RawMessage(raw))
	if err != nil {
		w.t.Fatal(err)
	}
	w.capi.create(tmpl)
}

func (w *capiWorld) deployment(name, template string, replicas int32) {
	w.t.Helper()
	w.capi.create(machineDeployment(w.ns, mdConfig{Name: name, Cluster: capiClusterName, Replicas: replicas,
		Template: template, BootstrapSecret: "bootstrap", MaxSurge: 1, MaxUnavailable: 0, Version: "v1.37.2"}))
}

// servers returns the simulator's servers of this world's WasmMachines
// (the Hetzner provider labels them with the WasmMachine's UID), running
// or not.
func (w *capiWorld) servers() []hcloudsim.ServerInfo {
	return w.sim.Servers()
}

// waitSettled waits until the MachineDeployment has n machines, all up to
// date, ready and available, and the simulator exactly n servers running,
// of serverType, each the instance of one WasmMachine whose providerID,
// addresses and conditions say so, and each created with the bootstrap
// data.
func (w *capiWorld) waitSettled(md string, n int32, serverType string, timeout time.Duration) {
	w.t.Helper()
	eventually(w.t, timeout, fmt.Sprintf("MachineDeployment %s settled at %d on %s", md, n, serverType), func() (bool, string) {
		st := w.capi.mdStatus(md)
		if !st.settled(n) {
			return false, st.String()
		}
		if msg := w.checkServers(int(n), serverType); msg != "" {
			return false, msg
		}
		return true, ""
	})
}

// checkServers returns what is wrong with the servers, "" if nothing.
func (w *capiWorld) checkServers(n int, serverType string) string {
	servers := w.servers()
	byUID := map[string]hcloudsim.ServerInfo{}
	for _, s := range servers {
		if s.Status != "running" || s.ServerType != serverType || s.UserData != bootstrapData {
			return fmt.Sprintf("server %s: %s, %s, user data %q", s.Name, s.Status, s.ServerType, s.UserData)
		}
		byUID[s.Labels["machine-uid"]] = s
	}
	wms := w.capi.wasmMachines()
	if len(servers) != n || len(wms) != n || len(byUID) != n {
		return fmt.Sprintf("%d servers (%d machine UIDs), %d WasmMachines, want %d", len(servers), len(byUID), len(wms), n)
	}
	for _, wm := range wms {
		s, ok := byUID[string(wm.GetUID())]
		if !ok {
			return fmt.Sprintf("WasmMachine %s has no server", wm.GetName())
		}
		pid, _, _ := unstructured.NestedString(wm.Object, "spec", "providerID")
		provisioned, _, _ := unstructured.NestedBool(wm.Object, "status", "initialization", "provisioned")
		if pid != "hcloud://"+strconv.FormatInt(s.ID, 10) || !provisioned || !hasAddress(wm, s.IPv4) {
			return fmt.Sprintf("WasmMachine %s: providerID %q, provisioned %v (server %d, %s)", wm.GetName(), pid, provisioned, s.ID, s.IPv4)
		}
	}
	return ""
}

func hasAddress(wm unstructured.Unstructured, ip string) bool {
	addrs, _, _ := unstructured.NestedSlice(wm.Object, "status", "addresses")
	for _, a := range addrs {
		if m, ok := a.(map[string]any); ok && m["address"] == ip {
			return true
		}
	}
	return false
}

// waitNothingLeft waits until the namespace has no Machine, no
// WasmMachine and the simulator no server.
func (w *capiWorld) waitNothingLeft(timeout time.Duration) {
	w.t.Helper()
	eventually(w.t, timeout, "no Machine, no WasmMachine, no server", func() (bool, string) {
		ms, wms, ss := len(w.capi.machines()), len(w.capi.wasmMachines()), len(w.servers())
		return ms == 0 && wms == 0 && ss == 0, fmt.Sprintf("%d Machines, %d WasmMachines, %d servers", ms, wms, ss)
	})
}

// availability watches the MachineDeployment from the API server while a
// rollout runs and records the fewest available machines it saw.
type availability struct {
	mu      sync.Mutex
	least   int32
	samples int
	stop    chan struct{}
	done    chan struct{}
}

func (w *capiWorld) watchAvailability(md string) *availability {
	a := &availability{least: 1 << 30, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var d clusterv1.MachineDeployment
			if err := w.capi.c.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: md}, &d); err != nil {
				continue
			}
			a.mu.Lock()
			a.least = min(a.least, ptr.Deref(d.Status.AvailableReplicas, 0))
			a.samples++
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *availability) result() (least int32, samples int) {
	close(a.stop)
	<-a.done
	return a.least, a.samples
}

// TestClusterAPIMachineDeployment: a MachineDeployment of WasmMachines
// through its whole life — 3 servers; scaled to 5 and to 1; back to 3;
// a new template (another server type) rolled out by Cluster API with
// maxSurge 1 / maxUnavailable 0, the provider hot-swapped to a new
// version in the middle, availability never below 3 as seen from the
// API server; deleted, leaving no server and no finalizer.
func TestClusterAPIMachineDeployment(t *testing.T) {
	w := newCAPIWorld(t)
	c := w.startController("a", "-leader-elect=false", "-cluster-api")
	w.template("workers-cx22", nil)
	w.deployment("workers", "workers-cx22", 3)
	w.waitSettled("workers", 3, "cx22", 3*time.Minute)
	for _, n := range []int32{5, 1, 3} {
		w.capi.scaleMD("workers", n)
		w.waitSettled("workers", n, "cx22", 2*time.Minute)
		t.Logf("scaled to %d: %d servers", n, len(w.servers()))
	}
	if nodes := w.capi.liveNodes(); nodes != 3 {
		t.Fatalf("%d Nodes for 3 machines", nodes)
	}

	reloads := func() float64 {
		return c.metric("wasmprov_registry_events_total", map[string]string{"kind": "reloaded"})
	}
	before := reloads()
	w.template("workers-cx32", map[string]any{"serverType": "cx32"})
	watch := w.watchAvailability("workers")
	// The rollout's first Create is held at the cloud while the provider
	// is swapped to a new version: the swap happens mid-rollout, with a
	// call in flight on the old version.
	w.hold.block()
	w.capi.setMDTemplate("workers", "workers-cx32")
	eventually(t, 2*time.Minute, "the rollout's first Create in flight", func() (bool, string) {
		return w.hold.blocked() == 1, fmt.Sprintf("%d Creates held", w.hold.blocked())
	})
	writeFile(t, w.dir+"/hetzner.wasm", withCustomSection(hetznerWasm, "e2e-capi-version-2"))
	eventually(t, 3*time.Minute, "the new provider version serving", func() (bool, string) {
		return reloads() > before, fmt.Sprintf("%v reloads", reloads())
	})
	for _, s := range w.servers() {
		if s.ServerType == "cx32" {
			t.Fatalf("a cx32 server (%s) exists before the held Create was let through", s.Name)
		}
	}
	w.hold.unblock()
	w.waitSettled("workers", 3, "cx32", 4*time.Minute)
	least, samples := watch.result()
	t.Logf("rollout: at least %d of 3 machines available over %d samples", least, samples)
	if least < 3 || samples == 0 { // desired 3 - maxUnavailable 0
		t.Fatalf("availability dropped to %d during the rollout (maxUnavailable 0), %d samples", least, samples)
	}
	failed := c.metric("wasmprov_wasmmachine_reconciles_total", map[string]string{"result": "error"})
	terminal := c.metric("wasmprov_wasmmachine_terminal_errors_total", nil)
	rejected := c.metric("wasmprov_registry_events_total", map[string]string{"kind": "rejected"})
	creates := c.metric("wasmprov_wasmmachine_instance_creates_total", nil)
	t.Logf("creates %v, failed reconciles %v, terminal %v, rejected versions %v", creates, failed, terminal, rejected)
	if failed != 0 || terminal != 0 || rejected != 0 {
		t.Fatalf("the swap or the rollout caused failures: %v failed and %v terminal reconciles, %v rejected versions", failed, terminal, rejected)
	}

	w.capi.deleteMD("workers")
	w.waitNothingLeft(3 * time.Minute)
	if n := c.metric("wasmprov_wasmmachines_total", map[string]string{"provider": "hetzner"}); n != 0 {
		t.Fatalf("wasmprov_wasmmachines_total %v after the deletion", n)
	}
}

// wasmMachineCondition returns the reason and message of a condition of
// the namespace's only WasmMachine, once there is one.
func (w *capiWorld) wasmMachineCondition(typ string) (status, reason, msg string) {
	wms := w.capi.wasmMachines()
	if len(wms) != 1 {
		return "", "", fmt.Sprintf("%d WasmMachines", len(wms))
	}
	conds, _, _ := unstructured.NestedSlice(wms[0].Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", "no " + typ + " condition"
}

// TestClusterAPIBadInput: a providerSpec naming a provider that does not
// exist (Ready says so, retries back off: no hot loop), and one the
// provider refuses as terminal (TerminalFailure, no retry, no server).
func TestClusterAPIBadInput(t *testing.T) {
	w := newCAPIWorld(t)
	c := w.startController("a", "-leader-elect=false", "-cluster-api")
	raw := w.machine("unused", nil).Spec.ProviderSpec.Value.Raw
	var spec map[string]any
	_ = json.Unmarshal(raw, &spec)
	spec["cloudProvider"] = "nowhere"
	tmpl, err := wasmMachineTemplate(w.ns, "missing", spec)
	if err != nil {
		t.Fatal(err)
	}
	w.capi.create(tmpl)
	w.deployment("missing", "missing", 1)
	eventually(t, 2*time.Minute, "Ready=False ProviderNotServing", func() (bool, string) {
		status, reason, msg := w.wasmMachineCondition("Ready")
		return status == "False" && reason == "ProviderNotServing" && strings.Contains(msg, `"nowhere"`), reason + ": " + msg
	})
	// Backoff doubles from 500ms: over 10 s, a handful of retries.
	start := c.metric("wasmprov_wasmmachine_reconciles_total", map[string]string{"result": "error"})
	time.Sleep(10 * time.Second)
	retries := c.metric("wasmprov_wasmmachine_reconciles_total", map[string]string{"result": "error"}) - start
	t.Logf("%v retries in 10 s for a provider that does not exist", retries)
	if retries > 8 {
		t.Fatalf("%v retries in 10 s: a hot loop", retries)
	}
	w.capi.deleteMD("missing")
	eventually(t, 2*time.Minute, "the MachineDeployment's machines gone", func() (bool, string) {
		return len(w.capi.machines()) == 0, fmt.Sprintf("%d Machines", len(w.capi.machines()))
	})

	// The simulator refuses the location: the provider's Validate says so
	// as a terminal error.
	w.template("nowhere", map[string]any{"location": "atlantis"})
	w.deployment("refused", "nowhere", 1)
	eventually(t, 2*time.Minute, "TerminalFailure=True", func() (bool, string) {
		status, reason, msg := w.wasmMachineCondition("TerminalFailure")
		return status == "True", reason + ": " + msg
	})
	_, reason, msg := w.wasmMachineCondition("TerminalFailure")
	t.Logf("terminal: %s: %s", reason, msg)
	reconciles := c.metric("wasmprov_wasmmachine_reconciles_total", nil)
	time.Sleep(5 * time.Second)
	if after := c.metric("wasmprov_wasmmachine_reconciles_total", nil); after-reconciles > 2 {
		t.Fatalf("%v reconciles in 5 s after a terminal error: retried", after-reconciles)
	}
	if n := len(w.servers()); n != 0 {
		t.Fatalf("%d servers for a refused spec", n)
	}
	w.capi.deleteMD("refused")
	w.waitNothingLeft(2 * time.Minute)
}

// TestClusterAPIDeleteDuringCreate deletes the MachineDeployment while the
// provider's Create request is held before the cloud answered: once it
// completes, the deletion finds and deletes the server. Nothing is
// orphaned.
func TestClusterAPIDeleteDuringCreate(t *testing.T) {
	w := newCAPIWorld(t)
	created := w.hold.arm()
	w.startController("a", "-leader-elect=false", "-cluster-api")
	w.template("workers-cx22", nil)
	w.deployment("early", "workers-cx22", 1)
	select {
	case <-created:
	case <-time.After(2 * time.Minute):
		t.Fatal("Create never reached the simulator")
	}
	t.Logf("Create reached the cloud; deleting the MachineDeployment")
	w.capi.deleteMD("early")
	eventually(t, time.Minute, "the WasmMachine being deleted", func() (bool, string) {
		wms := w.capi.wasmMachines()
		return len(wms) == 1 && wms[0].GetDeletionTimestamp() != nil, fmt.Sprintf("%d WasmMachines", len(wms))
	})
	if n := len(w.servers()); n != 1 {
		t.Fatalf("%d servers while Create is held after the cloud made it", n)
	}
	w.hold.release()
	w.waitNothingLeft(2 * time.Minute)
	t.Logf("the held Create returned, then Cleanup deleted its server")
	names := []string{}
	for _, s := range w.servers() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	if len(names) != 0 {
		t.Fatalf("orphaned servers %v", names)
	}
}
