//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hetznerFinalizer = "hetzner.wasmprov.io/delete-server"

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// waitProvisioned waits until every named Machine has its providerID and
// addresses, and returns them.
func (w *world) waitProvisioned(timeout time.Duration, ns ...string) []*clusterv1alpha1.Machine {
	w.t.Helper()
	var out []*clusterv1alpha1.Machine
	eventually(w.t, timeout, fmt.Sprintf("%d machines provisioned", len(ns)), func() (bool, string) {
		out = out[:0]
		var missing []string
		for _, n := range ns {
			m, ok := w.get(n)
			if !ok || !provisioned(m) {
				missing = append(missing, n)
				continue
			}
			out = append(out, m)
		}
		return len(missing) == 0, fmt.Sprintf("not yet provisioned: %v; servers: %d", missing, len(w.sim.Servers()))
	})
	return out
}

// checkProvisioned asserts what a provisioned Machine looks like: exactly
// one server, providerID naming it, its address in status, both finalizers.
func (w *world) checkProvisioned(m *clusterv1alpha1.Machine) {
	w.t.Helper()
	w.checkProvisionedOn(m, w.serversOf(m))
}

// checkProvisionedOn is checkProvisioned given the Machine's servers: a
// caller checking many Machines lists the servers once, not once each.
func (w *world) checkProvisionedOn(m *clusterv1alpha1.Machine, servers []hcloudsim.ServerInfo) {
	w.t.Helper()
	if len(servers) != 1 {
		w.t.Fatalf("machine %s has %d servers, want exactly 1: %+v", m.Name, len(servers), servers)
	}
	s := servers[0]
	if want := "hcloud://" + strconv.FormatInt(s.ID, 10); *m.Spec.ProviderID != want {
		w.t.Errorf("machine %s providerID = %q, want %q", m.Name, *m.Spec.ProviderID, want)
	}
	if !slices.ContainsFunc(m.Status.Addresses, func(a corev1.NodeAddress) bool { return a.Address == s.IPv4 }) {
		w.t.Errorf("machine %s addresses %v lack the server's IPv4 %s", m.Name, m.Status.Addresses, s.IPv4)
	}
	for _, f := range []string{controller.FinalizerDeleteInstance, hetznerFinalizer} {
		if !slices.Contains(m.Finalizers, f) {
			w.t.Errorf("machine %s finalizers %v lack %s", m.Name, m.Finalizers, f)
		}
	}
	if m.Status.ErrorReason != nil {
		w.t.Errorf("machine %s errorReason = %s", m.Name, *m.Status.ErrorReason)
	}
}

func (w *world) deleteAll() {
	w.t.Helper()
	for _, m := range w.list() {
		if err := machines.Delete(context.Background(), w.ns, m.Name, metav1.DeleteOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) waitAllGone(timeout time.Duration) {
	w.t.Helper()
	eventually(w.t, timeout, "all machines and servers gone", func() (bool, string) {
		ms, ss := w.list(), w.sim.Servers()
		return len(ms) == 0 && len(ss) == 0, fmt.Sprintf("%d machines, %d servers left", len(ms), len(ss))
	})
}

// TestLifecycle: 5 Machines → 5 servers; an invalid one → InvalidConfiguration
// and no server; PV-backed volumes detached before deletion; delete all →
// servers gone, finalizers removed, Machines gone.
func TestLifecycle(t *testing.T) {
	w := newWorld(t)
	c := w.startController("a", "-leader-elect=false", "-metrics-interval", "1s")
	start := time.Now()
	ns := names("worker", 5)
	for _, n := range ns {
		w.create(w.machine(n, nil))
	}
	bad := w.create(w.machine("invalid", map[string]any{"serverTyp": "cx22"})) // a typo: strict decoding refuses it
	ms := w.waitProvisioned(90*time.Second, ns...)
	t.Logf("5 machines provisioned in %v", time.Since(start).Round(time.Millisecond))
	for _, m := range ms {
		w.checkProvisioned(m)
	}
	if n := len(w.sim.Servers()); n != 5 {
		t.Fatalf("simulator has %d servers, want 5", n)
	}
	// The guest's own metrics (SetMetricsForMachines) on the controller's
	// /metrics: every Machine of the provider, the invalid one included,
	// counted by the Hetzner guest from its spec.
	eventually(t, 30*time.Second, "the Hetzner guest's machines gauge", func() (bool, string) {
		n := c.metric("wasmprov_guest_hetzner_machines", nil)
		return n == 6, fmt.Sprintf("wasmprov_guest_hetzner_machines sums to %v, want 6", n)
	})

	eventually(t, 30*time.Second, "invalid machine's errorReason", func() (bool, string) {
		m, _ := w.get(bad.Name)
		return m.Status.ErrorReason != nil, fmt.Sprintf("status %+v", m.Status)
	})
	m, _ := w.get(bad.Name)
	if *m.Status.ErrorReason != clusterv1alpha1.InvalidConfigurationMachineError || m.Status.ErrorMessage == nil {
		t.Fatalf("invalid machine: errorReason %s, errorMessage %v", *m.Status.ErrorReason, m.Status.ErrorMessage)
	}
	t.Logf("invalid machine: %s: %s", *m.Status.ErrorReason, *m.Status.ErrorMessage)
	if s := w.serversOf(m); len(s) != 0 {
		t.Fatalf("invalid machine got servers: %+v", s)
	}
	if p := m.Spec.ProviderID; p != nil {
		t.Fatalf("invalid machine got providerID %s", *p)
	}

	// A CSI volume backing a PersistentVolume is attached to worker-0's
	// server; another, not backing any PV, to worker-1's.
	s0, s1 := w.serversOf(ms[0])[0], w.serversOf(ms[1])[0]
	pvVol, err := w.sim.AddVolume("pvc-data", "fsn1", 10, s0.ID)
	if err != nil {
		t.Fatal(err)
	}
	scratchVol, err := w.sim.AddVolume("scratch", "fsn1", 10, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + w.ns},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.hetzner.cloud", VolumeHandle: strconv.FormatInt(pvVol, 10)}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	time.Sleep(time.Second) // let the controller's PV informer see it

	start = time.Now()
	w.deleteAll()
	w.waitAllGone(90 * time.Second)
	t.Logf("all machines deleted in %v", time.Since(start).Round(time.Millisecond))
	// The invalid Machine is gone too: the guest was told once that it has
	// no Machines, so its gauge describes none.
	eventually(t, 30*time.Second, "the machines gauge after the last Machine", func() (bool, string) {
		n := c.metric("wasmprov_guest_hetzner_machines", nil)
		return n == 0, fmt.Sprintf("wasmprov_guest_hetzner_machines sums to %v, want 0", n)
	})
	for _, v := range w.sim.Volumes() {
		if v.Server != nil {
			t.Errorf("volume %d (%s) still attached to %d", v.ID, v.Name, *v.Server)
		}
	}
	if auto := w.sim.AutoDetached(); !slices.Equal(auto, []int64{scratchVol}) {
		// Only the scratch volume (no PV) may have been detached by the API
		// deleting its server; the PV's volume must have been detached first.
		t.Errorf("volumes the API had to detach itself: %v; want only the scratch volume %d", auto, scratchVol)
	}
	if n := len(w.sim.Volumes()); n != 2 {
		t.Errorf("%d volumes left, want both (deleting a server must not delete volumes)", n)
	}
	if got := c.metric("wasmprov_controller_instance_creates_total", nil); got != 5 {
		t.Errorf("controller reports %v creates, want 5", got)
	}
	// controller-runtime's worker metrics are served beside ours.
	if got := c.metric("controller_runtime_reconcile_total", map[string]string{"controller": "machine"}); got == 0 {
		t.Error("/metrics lacks controller-runtime's controller_runtime_reconcile_total{controller=\"machine\"}")
	}
}

// TestHotReload replaces hetzner.wasm twice while Machines reconcile: no
// reconcile may fail because of the swap. Server creations are held at the
// simulator's door, so Create calls are in flight on the old version while
// the new versions take over; they finish there, and every later call runs
// on the newest version.
func TestHotReload(t *testing.T) {
	w := newWorld(t)
	w.hold.block()
	c := w.startController("a", "-leader-elect=false")
	ns := names("hot", 6)
	for _, n := range ns {
		w.create(w.machine(n, nil))
	}
	eventually(t, 60*time.Second, "4 Create calls in flight (one per worker)", func() (bool, string) {
		return w.hold.blocked() == 4, fmt.Sprintf("%d waiting", w.hold.blocked())
	})
	reloads := func() float64 {
		return c.metric("wasmprov_registry_events_total", map[string]string{"kind": "reloaded"})
	}
	// Each version differs only by a trailing custom section, so the
	// registry sees a new module (new digest) with the same behaviour.
	for v := 1; v <= 2; v++ {
		writeFile(t, w.dir+"/hetzner.wasm", withCustomSection(hetznerWasm, fmt.Sprintf("e2e-version-%d", v)))
		eventually(t, 180*time.Second, fmt.Sprintf("version %d serving", v), func() (bool, string) {
			n := reloads()
			return n >= float64(v), fmt.Sprintf("%v reloads", n)
		})
	}
	if n := w.hold.blocked(); n != 4 {
		t.Fatalf("%d Create calls still in flight after the swaps, want 4", n)
	}
	t.Logf("2 new versions serving while 4 Create calls run on the first")
	w.hold.unblock()
	ms := w.waitProvisioned(90*time.Second, ns...)
	for _, m := range ms {
		w.checkProvisioned(m)
	}
	eventually(t, 30*time.Second, "replaced versions drained", func() (bool, string) {
		n := c.metric("wasmprov_registry_events_total", map[string]string{"kind": "drained"})
		return n >= 2, fmt.Sprintf("%v drained", n)
	})
	rejected := c.metric("wasmprov_registry_events_total", map[string]string{"kind": "rejected"})
	failed := c.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "error"})
	terminal := c.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "terminal"})
	t.Logf("reloads %v, rejected %v, failed reconciles %v, terminal %v", reloads(), rejected, failed, terminal)
	if failed != 0 || terminal != 0 || rejected != 0 {
		t.Fatalf("swap caused failures: %v failed and %v terminal reconciles, %v rejected versions", failed, terminal, rejected)
	}
	if n := len(w.sim.Servers()); n != 6 {
		t.Fatalf("%d servers for 6 machines", n)
	}
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
}

// withCustomSection appends a wasm custom section named name. It carries a
// few bytes of data: wazero reads an empty one at the very end of a module
// as a truncated section.
func withCustomSection(wasm []byte, name string) []byte {
	payload := append(uleb(len(name)), name...)
	payload = append(payload, "wasmprov-e2e"...)
	out := append([]byte(nil), wasm...)
	out = append(out, 0)
	out = append(out, uleb(len(payload))...)
	return append(out, payload...)
}

func uleb(n int) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// TestKillMidCreate kills the controller (SIGKILL) after the simulator
// created the server but before the controller learnt of it; a new
// controller must adopt that server, never make a second, never lose it.
func TestKillMidCreate(t *testing.T) {
	w := newWorld(t)
	created := w.hold.arm()
	c1 := w.startController("first")
	m := w.create(w.machine("victim", nil))
	select {
	case <-created:
	case <-time.After(60 * time.Second):
		t.Fatal("Create never reached the simulator")
	}
	c1.kill()
	w.hold.release()
	if n := len(w.serversOf(m)); n != 1 {
		t.Fatalf("after the kill: %d servers, want the 1 created", n)
	}
	cur, _ := w.get(m.Name)
	if !slices.Contains(cur.Finalizers, controller.FinalizerDeleteInstance) {
		t.Fatalf("finalizer missing although Create ran: %v", cur.Finalizers)
	}

	// Watch the simulator the whole time the second controller works: the
	// machine must have exactly one server throughout, never zero or two.
	stop := make(chan struct{})
	seen := make(chan [2]int, 1)
	go func() {
		least, most := 1, 1
		for {
			select {
			case <-stop:
				seen <- [2]int{least, most}
				return
			case <-time.After(20 * time.Millisecond):
				n := len(w.serversOf(m))
				least, most = min(least, n), max(most, n)
			}
		}
	}()
	start := time.Now()
	c2 := w.startController("second")
	got := w.waitProvisioned(90*time.Second, m.Name)[0]
	t.Logf("second controller adopted the server %v after start (Lease takeover included)", time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // and keeps reconciling without creating another
	close(stop)
	if s := <-seen; s != [2]int{1, 1} {
		t.Fatalf("servers for the machine ranged from %d to %d, want always exactly 1", s[0], s[1])
	}
	w.checkProvisioned(got)
	if n := c2.metric("wasmprov_controller_instance_creates_total", nil); n != 0 {
		t.Fatalf("second controller created %v instances, want 0 (adopt the existing one)", n)
	}
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
}

// TestKillBeforeCreateReachesCloud kills the controller while its Create
// request is still on the way (held before the simulator saw it): the
// finalizer is on, no server exists, and the next controller creates
// exactly one.
func TestKillBeforeCreateReachesCloud(t *testing.T) {
	w := newWorld(t)
	w.hold.block()
	c1 := w.startController("first")
	m := w.create(w.machine("early", nil))
	eventually(t, 60*time.Second, "the Create request on its way", func() (bool, string) {
		return w.hold.blocked() == 1, fmt.Sprintf("%d waiting", w.hold.blocked())
	})
	c1.kill()
	eventually(t, 10*time.Second, "the held request to be abandoned", func() (bool, string) {
		return w.hold.blocked() == 0, fmt.Sprintf("%d waiting", w.hold.blocked())
	})
	w.hold.unblock()
	if n := len(w.serversOf(m)); n != 0 {
		t.Fatalf("%d servers although the request never reached the cloud", n)
	}
	cur, _ := w.get(m.Name)
	if !slices.Contains(cur.Finalizers, controller.FinalizerDeleteInstance) {
		t.Fatalf("finalizer missing although Create was called: %v", cur.Finalizers)
	}
	c2 := w.startController("second")
	got := w.waitProvisioned(90*time.Second, m.Name)[0]
	time.Sleep(time.Second)
	w.checkProvisioned(got)
	if n := c2.metric("wasmprov_controller_instance_creates_total", nil); n != 1 {
		t.Fatalf("second controller made %v creates, want 1", n)
	}
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
}

// TestCloudErrors: the simulator answers 5xx and 429 for a while; reconcile
// retries and converges, with no terminal error and no duplicate server.
func TestCloudErrors(t *testing.T) {
	w := newWorld(t)
	f503 := w.sim.Inject(hcloudsim.Fault{Name: "503", Path: "/v1/*", Status: 503, Times: 12})
	f429 := w.sim.Inject(hcloudsim.Fault{Name: "429", Path: "/v1/*", Status: 429, Times: 6, Header: map[string]string{"Retry-After": "1"}})
	f500 := w.sim.Inject(hcloudsim.Fault{Name: "500-after", Method: "POST", Path: "/v1/servers", Status: 500, After: true, Times: 1})
	c := w.startController("a", "-leader-elect=false")
	ns := names("flaky", 3)
	for _, n := range ns {
		w.create(w.machine(n, nil))
	}
	ms := w.waitProvisioned(120*time.Second, ns...)
	for _, m := range ms {
		w.checkProvisioned(m)
	}
	t.Logf("faults hit: 503×%d 429×%d 500-after-create×%d; failed reconciles retried: %v",
		f503.Hits(), f429.Hits(), f500.Hits(), c.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "error"}))
	if f503.Hits() == 0 || f429.Hits() == 0 || f500.Hits() == 0 {
		t.Fatal("a fault was never hit: the test proves nothing")
	}
	if n := len(w.sim.Servers()); n != 3 {
		t.Fatalf("%d servers for 3 machines", n)
	}
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
}

// TestLeaderElection: two replicas; only the leader reconciles; killing it
// hands over to the other, which then reconciles.
func TestLeaderElection(t *testing.T) {
	w := newWorld(t)
	a := w.startController("replica-a")
	b := w.startController("replica-b")
	byID := map[string]*proc{"replica-a": a, "replica-b": b}
	var leader, follower *proc
	eventually(t, 30*time.Second, "a leader", func() (bool, string) {
		id := w.leader()
		return byID[id] != nil, "holder " + id
	})
	leader = byID[w.leader()]
	for _, p := range byID {
		if p != leader {
			follower = p
		}
	}
	ns := names("ha", 3)
	for _, n := range ns {
		w.create(w.machine(n, nil))
	}
	w.waitProvisioned(90*time.Second, ns...)
	reconciles := func(p *proc) float64 { return p.metric("wasmprov_controller_reconciles_total", nil) }
	if n := reconciles(follower); n != 0 {
		t.Fatalf("follower %s reconciled %v times", follower.id, n)
	}
	if n := leader.metric("wasmprov_controller_instance_creates_total", nil); n != 3 {
		t.Fatalf("leader %s created %v instances, want 3", leader.id, n)
	}
	if leader.metric("machine_controller_workers", nil) == 0 || follower.metric("machine_controller_workers", nil) != 0 {
		t.Fatal("workers gauge: leader should have workers, follower none")
	}

	// Kill the leader: the follower takes over once the Lease expires.
	start := time.Now()
	leader.kill()
	eventually(t, 30*time.Second, "takeover by "+follower.id, func() (bool, string) {
		return w.leader() == follower.id, "holder " + w.leader()
	})
	t.Logf("takeover after SIGKILL of the leader: %v (lease duration 4s)", time.Since(start).Round(time.Millisecond))
	more := names("after", 2)
	for _, n := range more {
		w.create(w.machine(n, nil))
	}
	for _, m := range w.waitProvisioned(90*time.Second, more...) {
		w.checkProvisioned(m)
	}
	if n := follower.metric("wasmprov_controller_instance_creates_total", nil); n != 2 {
		t.Fatalf("new leader created %v instances, want 2", n)
	}

	// A graceful stop releases the Lease at once for the next replica.
	c := w.startController("replica-c")
	start = time.Now()
	if err := follower.stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, tail(follower.log.String(), 30))
	}
	eventually(t, 30*time.Second, "takeover by replica-c", func() (bool, string) {
		return w.leader() == "replica-c", "holder " + w.leader()
	})
	t.Logf("takeover after SIGTERM of the leader: %v", time.Since(start).Round(time.Millisecond))
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
	if n := c.metric("wasmprov_controller_instance_deletes_total", nil); n < 5 {
		t.Errorf("replica-c made %v successful Delete calls, want at least 5", n)
	}
}
