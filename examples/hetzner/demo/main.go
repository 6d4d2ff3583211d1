//go:build !wasip1

// Command demo runs the Hetzner provider .wasm through the whole Machine
// lifecycle for three Machines at once, against the Hetzner API simulator
// on 127.0.0.1: no cluster, no cloud, no network.
//
//	go run ./examples/hetzner/demo --provider build/guests/hetzner.wasm
//
// Secrets and PersistentVolumes live in client-go's fake clientset, read
// through informer-backed listers; Machines live in an in-memory store with
// resourceVersion and conflict semantics (package hetznertest), behind
// machine-controller's MachineUpdater.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hetznertest"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

var (
	outMu sync.Mutex
	start = time.Now()
)

func say(who, format string, args ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("%6.2fs  %-8s %s\n", time.Since(start).Seconds(), who, fmt.Sprintf(format, args...))
}

func main() {
	wasm := flag.String("provider", "build/guests/hetzner.wasm", "the Hetzner provider module")
	cacheDefault := ""
	if d, err := os.UserCacheDir(); err == nil {
		cacheDefault = filepath.Join(d, "wasmprov")
	}
	cache := flag.String("cache", cacheDefault, "compilation cache directory (\"\" for none)")
	engine := flag.String("engine", "", "engine: wazero (default) or wasmtime (a binary built with -tags wasmtime)")
	verbose := flag.Bool("v", false, "show the provider's and the runtime's logs")
	flag.Parse()
	if err := run(*wasm, *cache, runtime.Engine(*engine), *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run(wasm, cacheDir string, engine runtime.Engine, verbose bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sim, err := hcloudsim.Start(hcloudsim.Options{BootDuration: 1500 * time.Millisecond, ActionDuration: 300 * time.Millisecond}, 0)
	if err != nil {
		return err
	}
	defer sim.Close()
	say("sim", "Hetzner Cloud API simulator on %s", sim.URL)
	// What a person sets up before writing the Machines: the private
	// network and the firewall they name.
	if _, err := sim.AddNetwork("kubernetes", "10.0.0.0/16"); err != nil {
		return err
	}
	if _, err := sim.AddFirewall("k8s-nodes"); err != nil {
		return err
	}
	say("sim", "network kubernetes (10.0.0.0/16) and firewall k8s-nodes exist")

	cluster := hetznertest.NewCluster()
	defer cluster.Close()
	if err := cluster.AddSecret(ctx, "hetzner", "token", sim.Token()); err != nil {
		return err
	}
	say("cluster", "fake clientset: Secret %s/hetzner (key token); PV lister from a shared informer", hetznertest.Namespace)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts := []runtime.Option{runtime.WithEngine(engine), runtime.WithKubernetesClient(cluster.Kube), runtime.WithLogger(logger)}
	if cacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(cacheDir))
	}
	rt, err := runtime.New(opts...)
	if err != nil {
		return err
	}
	defer rt.Close(context.Background())
	simURL, err := url.Parse(sim.URL)
	if err != nil {
		return err
	}
	p, err := load(ctx, rt, wasm, cacheDir, simURL.Host)
	if err != nil {
		return err
	}

	// Three Machines; the third uses the legacy datacenter field.
	specs := []struct{ name, where, dc string }{{"worker-a", "fsn1", ""}, {"worker-b", "nbg1", ""}, {"worker-c", "", "hel1-dc2"}}
	machines := make([]*clusterv1alpha1.Machine, len(specs))
	for i, s := range specs {
		cps := map[string]any{"token": hetznertest.TokenRef("hetzner", "token"), "serverType": "cx22",
			"endpoint": sim.URL, "labels": map[string]any{"cluster": "demo"},
			"placementGroupPrefix": "demo", "networks": []string{"kubernetes"}, "firewalls": []string{"k8s-nodes"}}
		if s.where != "" {
			cps["location"] = s.where
		} else {
			cps["datacenter"] = s.dc
		}
		machines[i] = cluster.Machines.Add(hetznertest.Machine(s.name, fmt.Sprintf("uid-%s-%d", s.name, time.Now().UnixNano()%1e6), "ubuntu", cps))
	}

	say("demo", "creating 3 machines concurrently")
	if err := each(machines, func(m *clusterv1alpha1.Machine) error { return create(ctx, p, cluster, sim, m) }); err != nil {
		return err
	}
	showCloud(sim, "cloud after create")
	showMachines(cluster, machines)
	if err := showMetrics(ctx, p, cluster, machines); err != nil {
		return err
	}

	say("demo", "deleting 3 machines concurrently (their PV volumes are detached first)")
	sim.ResetRequests()
	if err := each(machines, func(m *clusterv1alpha1.Machine) error { return remove(ctx, p, cluster, m) }); err != nil {
		return err
	}
	showOrder(sim)
	showCloud(sim, "cloud after delete")
	showMachines(cluster, machines)

	left := len(sim.Servers()) + len(sim.SSHKeys()) + len(sim.PlacementGroups())
	for _, f := range sim.Firewalls() {
		left += len(f.AppliedTo)
	}
	for _, n := range sim.Networks() {
		left += len(n.Servers)
	}
	for _, v := range sim.Volumes() {
		if v.Server != nil {
			left++
		}
	}
	for _, m := range machines {
		cur, _ := cluster.Machines.Get(m.Namespace, m.Name)
		if len(cur.Finalizers) > 0 {
			left++
		}
	}
	if left > 0 {
		return fmt.Errorf("%d things left behind", left)
	}
	say("demo", "done: no server, SSH key, placement group, firewall attachment, network member, attached volume or finalizer left (%d volumes kept, detached)", len(sim.Volumes()))
	return nil
}

// load compiles the module, showing progress: a cold compile of a Go guest
// takes seconds, a cached one milliseconds.
// The policy allows the simulator's address only (simHost, "127.0.0.1:PORT").
func load(ctx context.Context, rt *runtime.Runtime, wasm, cacheDir, simHost string) (*runtime.Provider, error) {
	st, err := os.Stat(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w (build it with: make guests)", err)
	}
	say("runtime", "loading %s (%.1f MiB), compilation cache %q", wasm, float64(st.Size())/(1<<20), cacheDir)
	type result struct {
		p   *runtime.Provider
		err error
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() {
		p, err := rt.Load(ctx, wasm, runtime.WithPolicy(runtime.Policy{
			AllowedHosts: []string{simHost}, AllowInsecureHTTP: true, PoolSize: 3, Prewarm: 3,
		}))
		done <- result{p, err}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, r.err
			}
			say("runtime", "loaded in %v: sha256 %.12s…, capabilities %v", time.Since(t0).Round(time.Millisecond),
				r.p.SHA256(), r.p.Granted().Names())
			return r.p, nil
		case <-tick.C:
			say("runtime", "compiling… %ds", int(time.Since(t0).Seconds()))
		}
	}
}

func each(ms []*clusterv1alpha1.Machine, fn func(*clusterv1alpha1.Machine) error) error {
	errs := make(chan error, len(ms))
	for _, m := range ms {
		go func() { errs <- fn(m) }()
	}
	var first error
	for range ms {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func create(ctx context.Context, p provider.Interface, c *hetznertest.Cluster, sim *hcloudsim.Running, m *clusterv1alpha1.Machine) error {
	who := m.Name
	ctx = provider.WithMachineNamespace(ctx, m.Namespace)
	spec, err := p.AddDefaults(ctx, m.Spec, nil)
	if err != nil {
		return fmt.Errorf("%s: AddDefaults: %w", who, err)
	}
	say(who, "AddDefaults: cloudProviderSpec %s", cps(spec))
	m.Spec = spec
	if err := p.Validate(ctx, m.Spec, nil); err != nil {
		return fmt.Errorf("%s: Validate: %w", who, err)
	}
	say(who, "Validate: ok (token from Secret, location, server type and image exist)")
	labels, _ := p.MachineMetricsLabels(ctx, m, nil)
	say(who, "MachineMetricsLabels: %v", labels)
	if _, err := p.Get(ctx, m, nil); err != nil {
		say(who, "Get before Create: %v", err)
	}
	say(who, "Create: finalizers before %v", m.Finalizers)
	inst, err := p.Create(ctx, m, c.Data(), "#cloud-config\nhostname: "+m.Name+"\n")
	if err != nil {
		return fmt.Errorf("%s: Create: %w", who, err)
	}
	for _, e := range c.Machines.Events(m.Name) {
		say(who, "  machine write rv=%s finalizers=%v annotations=%v", e.ResourceVersion, e.Finalizers, e.Annotations)
	}
	say(who, "Create: server %s %s, status %s", inst.ID(), inst.ProviderID(), inst.Status())
	cur, _ := c.Machines.Get(m.Namespace, m.Name)
	for inst.Status() != instance.StatusRunning {
		time.Sleep(250 * time.Millisecond)
		if inst, err = p.Get(ctx, cur, nil); err != nil {
			return fmt.Errorf("%s: Get: %w", who, err)
		}
		say(who, "Get: %s", inst.Status())
	}
	addrs := make([]string, 0)
	for a, t := range inst.Addresses() {
		addrs = append(addrs, fmt.Sprintf("%s (%s)", a, t))
	}
	sort.Strings(addrs)
	say(who, "Get: running at %s", strings.Join(addrs, ", "))

	// A volume the Hetzner CSI driver attached for a PersistentVolume.
	var id int64
	fmt.Sscan(inst.ID(), &id)
	// (The simulator does not check that a volume shares its server's location.)
	vol, err := sim.AddVolume("pvc-"+m.Name, "fsn1", 10, id)
	if err != nil {
		return err
	}
	if err := c.AddCSIVolume(ctx, "pv-"+m.Name, vol); err != nil {
		return err
	}
	say(who, "PersistentVolume pv-%s: csi.hetzner.cloud volume %d attached to server %d", m.Name, vol, id)
	return nil
}

func remove(ctx context.Context, p provider.Interface, c *hetznertest.Cluster, m *clusterv1alpha1.Machine) error {
	cur, err := c.Machines.Get(m.Namespace, m.Name)
	if err != nil {
		return err
	}
	for {
		data := c.Data()
		var note string
		data.Progress = func(n string, _ time.Duration) { note = n }
		done, err := p.Cleanup(ctx, cur, data)
		if err == nil && done {
			break
		}
		if err == nil {
			// The provider declares async_delete: Cleanup returned while
			// the cloud deletes; call again, as the controller would.
			d := 500 * time.Millisecond
			say(m.Name, "Cleanup: in progress (%s); calling again in %v", note, d)
			time.Sleep(d)
			cur, _ = c.Machines.Get(m.Namespace, m.Name)
			continue
		}
		d, ok := cloudRetry(err)
		if !ok {
			return fmt.Errorf("%s: Cleanup: %w", m.Name, err)
		}
		say(m.Name, "Cleanup: %v; retrying in %v", err, d)
		time.Sleep(d)
		cur, _ = c.Machines.Get(m.Namespace, m.Name)
	}
	cur, _ = c.Machines.Get(m.Namespace, m.Name)
	say(m.Name, "Cleanup: done; finalizers now %v", cur.Finalizers)
	if _, err := p.Get(ctx, cur, nil); err != nil {
		say(m.Name, "Get after Cleanup: %v", err)
	}
	return nil
}

// showMetrics runs the provider's SetMetricsForMachines over the Machines
// and prints the samples the host would expose.
func showMetrics(ctx context.Context, p *runtime.Provider, c *hetznertest.Cluster, machines []*clusterv1alpha1.Machine) error {
	var list clusterv1alpha1.MachineList
	for _, m := range machines {
		cur, err := c.Machines.Get(m.Namespace, m.Name)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, *cur)
	}
	if err := p.SetMetricsForMachines(ctx, list, nil); err != nil {
		return fmt.Errorf("SetMetricsForMachines: %w", err)
	}
	for _, s := range p.MetricSamples() {
		say("metrics", "%s%s{location=%q,server_type=%q} %v", runtime.MetricNamePrefix(p.Name()), s.Name,
			s.Labels["location"], s.Labels["server_type"], s.Value)
	}
	return nil
}

func cloudRetry(err error) (time.Duration, bool) {
	if runtime.ErrorClass(err) != runtime.ClassTransient {
		return 0, false
	}
	return time.Second, true
}

func cps(spec clusterv1alpha1.MachineSpec) string {
	raw := string(spec.ProviderSpec.Value.Raw)
	i := strings.Index(raw, `"cloudProviderSpec":`)
	if i < 0 {
		return raw
	}
	s := raw[i+len(`"cloudProviderSpec":`):]
	depth := 0
	for j, ch := range s {
		switch ch {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				s = s[:j+1]
				// The token reference and endpoint are long and the same
				// for every machine.
				return s
			}
		}
	}
	return s
}

func showCloud(sim *hcloudsim.Running, title string) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Printf("\n  ── %s ──\n", title)
	servers := sim.Servers()
	fmt.Printf("  servers: %d\n", len(servers))
	for _, s := range servers {
		fmt.Printf("    #%d %-9s %-8s %-14s labels=%v volumes=%v\n", s.ID, s.Name, s.Status, s.IPv4, s.Labels, s.Volumes)
		fmt.Printf("          placement group #%d, private %v, firewalls %v\n", s.PlacementGroup, s.PrivateIPs, s.Firewalls)
	}
	fmt.Printf("  ssh keys: %d\n", len(sim.SSHKeys()))
	groups := sim.PlacementGroups()
	fmt.Printf("  placement groups: %d\n", len(groups))
	for _, g := range groups {
		fmt.Printf("    #%d %-14s %s servers=%v\n", g.ID, g.Name, g.Type, g.Servers)
	}
	for _, n := range sim.Networks() {
		fmt.Printf("  network #%d %s %s: servers=%v\n", n.ID, n.Name, n.IPRange, n.Servers)
	}
	for _, f := range sim.Firewalls() {
		var on []int64
		for _, r := range f.AppliedTo {
			on = append(on, r.Server.ID)
		}
		fmt.Printf("  firewall #%d %s: applied to servers %v\n", f.ID, f.Name, on)
	}
	vols := sim.Volumes()
	fmt.Printf("  volumes: %d\n", len(vols))
	for _, v := range vols {
		server := "detached"
		if v.Server != nil {
			server = fmt.Sprintf("attached to #%d", *v.Server)
		}
		fmt.Printf("    #%d %-14s %s\n", v.ID, v.Name, server)
	}
	fmt.Println()
}

func showMachines(c *hetznertest.Cluster, ms []*clusterv1alpha1.Machine) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Println("  ── machines ──")
	for _, m := range ms {
		cur, err := c.Machines.Get(m.Namespace, m.Name)
		if err != nil {
			continue
		}
		fmt.Printf("    %-9s rv=%-3s finalizers=%v annotations=%v\n", cur.Name, cur.ResourceVersion, cur.Finalizers, cur.Annotations)
	}
	fmt.Println()
}

// showOrder prints the API calls that detached volumes and deleted servers,
// in the order the simulator saw them.
func showOrder(sim *hcloudsim.Running) {
	for _, r := range sim.Requests() {
		if (r.Method == "POST" && strings.HasSuffix(r.Path, "/actions/detach")) || (r.Method == "DELETE" && strings.HasPrefix(r.Path, "/v1/servers/")) ||
			(r.Method == "DELETE" && strings.HasPrefix(r.Path, "/v1/ssh_keys/")) {
			say("api", "%s %s → %d", r.Method, r.Path, r.Status)
		}
	}
}
