//go:build !wasip1

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/runtime"
)

// The manifests of examples/hetzner/testdata are in the shape of
// machine-controller's Hetzner example and run as they are: the token is a
// secretKeyRef to kube-system/machine-controller-hetzner (loaded from
// secret.yaml into the fake clientset), and there is no endpoint field —
// the policy's hostAliases sends https://api.hetzner.cloud to the
// simulator.

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadSecret puts secret.yaml into the fake clientset as the API server
// would store it (stringData merged into data).
func loadSecret(t *testing.T) {
	t.Helper()
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(testdata(t, "secret.yaml"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	_, err := cluster.Kube.CoreV1().Secrets(s.Namespace).Create(context.Background(), &s, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// fromDeployment makes the i-th Machine of a MachineDeployment manifest,
// as the MachineSet controller would: the template's spec, untouched.
func fromDeployment(t *testing.T, file string, i int) *clusterv1alpha1.Machine {
	t.Helper()
	var md clusterv1alpha1.MachineDeployment
	if err := yaml.Unmarshal(testdata(t, file), &md); err != nil {
		t.Fatal(err)
	}
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%d-%d", md.Name, uidSeq.Add(1), i), Namespace: md.Namespace,
		Labels: md.Spec.Template.Labels,
	}}
	m.Spec = *md.Spec.Template.Spec.DeepCopy()
	m.UID = types.UID(fmt.Sprintf("uid-%s-%d", m.Name, time.Now().UnixNano()))
	return m
}

func fromMachine(t *testing.T, file string) *clusterv1alpha1.Machine {
	t.Helper()
	var m clusterv1alpha1.Machine
	if err := yaml.Unmarshal(testdata(t, file), &m); err != nil {
		t.Fatal(err)
	}
	m.Name = fmt.Sprintf("%s-%d", m.Name, uidSeq.Add(1))
	m.UID = types.UID(fmt.Sprintf("uid-%s-%d", m.Name, time.Now().UnixNano()))
	return &m
}

// aliased loads the variant with a policy that allows api.hetzner.cloud
// only and sends it to sim.
func aliased(t *testing.T, e *env, sim *hcloudsim.Running, env ...string) *runtime.Provider {
	t.Helper()
	pol := runtime.Policy{AllowedHosts: []string{"api.hetzner.cloud"}, AllowedEnv: env,
		HostAliases: map[string]string{"api.hetzner.cloud": "http://" + sim.Addr},
		CallTimeout: runtime.Duration(30 * time.Second)}
	p, err := e.rt.Load(context.Background(), e.wasmPath, runtime.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// topology is what a person sets up before applying the manifests.
func topology(t *testing.T, sim *hcloudsim.Running) (network, firewall int64) {
	t.Helper()
	network, err := sim.AddNetwork("kubernetes", "10.0.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	if firewall, err = sim.AddFirewall("k8s-nodes"); err != nil {
		t.Fatal(err)
	}
	return network, firewall
}

// expectEmpty checks the simulator holds nothing a test left behind: no
// server, SSH key or placement group, no firewall applied, no network
// member.
func expectEmpty(t *testing.T, sim *hcloudsim.Running) {
	t.Helper()
	if s := sim.Servers(); len(s) != 0 {
		t.Errorf("servers left: %+v", s)
	}
	if k := sim.SSHKeys(); len(k) != 0 {
		t.Errorf("ssh keys left: %+v", k)
	}
	if g := sim.PlacementGroups(); len(g) != 0 {
		t.Errorf("placement groups left: %+v", g)
	}
	for _, f := range sim.Firewalls() {
		if len(f.AppliedTo) != 0 {
			t.Errorf("firewall %s still applied to %+v", f.Name, f.AppliedTo)
		}
	}
	for _, n := range sim.Networks() {
		if len(n.Servers) != 0 {
			t.Errorf("network %s still holds %v", n.Name, n.Servers)
		}
	}
}

func current(t *testing.T, m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	t.Helper()
	cur, err := cluster.Machines.Get(m.Namespace, m.Name)
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// deleteAll calls Delete on each of ms until it succeeds, moving the
// simulator's clock on between calls.
func deleteAll(t *testing.T, p *runtime.Provider, ctx context.Context, clock *simClock, ms ...*clusterv1alpha1.Machine) {
	t.Helper()
	for _, m := range ms {
		for calls := 0; ; calls++ {
			err := p.Delete(ctx, current(t, m), cluster.Data())
			if err == nil {
				break
			}
			if calls > 300 {
				t.Fatalf("Delete of %s still failing: %v", m.Name, err)
			}
			expectClass(t, err, runtime.ClassTransient)
			clock.advance(10 * time.Millisecond)
		}
	}
}

func TestUpstreamManifests(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if testing.Short() && v.name != "stdlib" {
				t.Skip("-short: the hcloud-go variant runs in the full suite only")
			}
			e := getEnv(t, v.dir)
			loadSecret(t)
			clock := &simClock{}
			sim, err := hcloudsim.Start(hcloudsim.Options{BootDuration: 100 * time.Millisecond, ActionDuration: 50 * time.Millisecond, Now: clock.now}, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			netID, fwID := topology(t, sim)
			p := aliased(t, e, sim, "HZ_TOKEN")
			ctx := provider.WithMachineNamespace(context.Background(), "kube-system")

			// The example's old names are retired: a clear terminal error
			// from Validate and from Create, and nothing in the cloud.
			old := cluster.Machines.Add(fromDeployment(t, "machinedeployment-cx21.yaml", 0))
			spec, err := p.AddDefaults(ctx, old.Spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Validate(ctx, spec, nil)
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
			if !strings.Contains(err.Error(), `"cx21"`) {
				t.Errorf("the error does not name the server type: %v", err)
			}
			_, err = p.Create(ctx, old, cluster.Data(), "#cloud-config\n")
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
			deleteAll(t, p, ctx, clock, old)
			expectEmpty(t, sim)

			// Three replicas of the current deployment and the Machine:
			// one placement group, the network and the firewall on each.
			var ms []*clusterv1alpha1.Machine
			for i := 0; i < 3; i++ {
				ms = append(ms, cluster.Machines.Add(fromDeployment(t, "machinedeployment.yaml", i)))
			}
			ms = append(ms, cluster.Machines.Add(fromMachine(t, "machine.yaml")))
			for _, m := range ms {
				spec, err := p.AddDefaults(ctx, m.Spec, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Validate(ctx, spec, nil); err != nil {
					t.Fatalf("Validate %s: %v", m.Name, err)
				}
				if _, err := p.Create(ctx, m, cluster.Data(), "#cloud-config\n"); err != nil {
					t.Fatalf("Create %s: %v", m.Name, err)
				}
			}
			servers := sim.Servers()
			if len(servers) != len(ms) {
				t.Fatalf("%d servers for %d machines", len(servers), len(ms))
			}
			groups := sim.PlacementGroups()
			if len(groups) != 1 || len(groups[0].Servers) != len(ms) || !strings.HasPrefix(groups[0].Name, "workers-") ||
				groups[0].Labels["my"] != "label" || len(groups[0].Labels) != 1 {
				t.Fatalf("placement groups %+v", groups)
			}
			for _, s := range servers {
				if s.PlacementGroup != groups[0].ID || len(s.PrivateIPs) != 1 || !strings.HasPrefix(s.PrivateIPs[0], "10.0.0.") ||
					len(s.Firewalls) != 1 || s.Firewalls[0] != fwID || s.Labels["my"] != "label" {
					t.Errorf("server %+v: want group %d, network %d, firewall %d, label my=label", s, groups[0].ID, netID, fwID)
				}
			}
			if k := sim.SSHKeys(); len(k) != 0 {
				t.Errorf("temporary ssh keys left after Create: %+v", k)
			}
			last := servers[len(servers)-1]
			if last.IPv4 != "" {
				t.Errorf("machine.yaml has assignPublicIPv4 false, server has %s", last.IPv4)
			}
			fip, err := sim.AddFloatingIP(servers[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range ms {
				inst, err := p.Get(ctx, current(t, m), nil)
				if err != nil {
					t.Fatalf("Get %s: %v", m.Name, err)
				}
				var ext, internal []string
				for a, kind := range inst.Addresses() {
					switch string(kind) {
					case "ExternalIP":
						ext = append(ext, a)
					case "InternalIP":
						internal = append(internal, a)
					}
				}
				sort.Strings(ext)
				if len(internal) != 1 || internal[0] != servers[i].PrivateIPs[0] {
					t.Errorf("%s: internal addresses %v, want %v", m.Name, internal, servers[i].PrivateIPs)
				}
				want := 2 // IPv4 and IPv6 ::1
				if i == 0 {
					want = 3 // and the floating IP
				}
				if i == len(ms)-1 {
					want = 1 // IPv6 only
				}
				if len(ext) != want {
					t.Errorf("%s: external addresses %v, want %d", m.Name, ext, want)
				}
				if i == 0 && !strings.Contains(strings.Join(ext, ","), "198.51.100.") {
					t.Errorf("%s: floating IP %d not among %v", m.Name, fip, ext)
				}
				labels, err := p.MachineMetricsLabels(ctx, m, nil)
				if err != nil || len(labels) != 2 || labels["size"] == "" || labels["location"] == "" {
					t.Errorf("metrics labels %v, %v", labels, err)
				}
			}
			// Deleting one Machine leaves the group to the others; the last
			// one takes it along.
			deleteAll(t, p, ctx, clock, ms[0])
			if g := sim.PlacementGroups(); len(g) != 1 || len(g[0].Servers) != len(ms)-1 {
				t.Fatalf("after one delete: %+v", g)
			}
			deleteAll(t, p, ctx, clock, ms[1:]...)
			expectEmpty(t, sim)
			for _, m := range append(ms, old) {
				if cur := current(t, m); len(cur.Finalizers) != 0 {
					t.Errorf("%s keeps finalizers %v", m.Name, cur.Finalizers)
				}
			}
		})
	}
}

// The HZ_TOKEN fallback of a Secret that cannot be read is the policy's
// to allow: without HZ_TOKEN in AllowedEnv, the error names the Secret
// even though the variable is set.
func TestTokenFallbackNeedsThePolicy(t *testing.T) {
	e := getEnv(t, variants[0].dir)
	sim, err := hcloudsim.Start(hcloudsim.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	t.Setenv("HZ_TOKEN", sim.Token())
	m := fromMachine(t, "machine.yaml")
	var spec map[string]any
	if err := yaml.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	cps := spec["cloudProviderSpec"].(map[string]any)
	cps["token"].(map[string]any)["secretKeyRef"].(map[string]any)["name"] = "no-such-secret"
	delete(cps, "networks")
	delete(cps, "firewalls")
	cps["assignPublicIPv4"] = true
	m.Spec.ProviderSpec.Value.Raw, _ = yaml.Marshal(spec)
	m.Spec.ProviderSpec.Value.Raw, _ = yaml.YAMLToJSON(m.Spec.ProviderSpec.Value.Raw)
	ctx := provider.WithMachineNamespace(context.Background(), "kube-system")
	err = aliased(t, e, sim).Validate(ctx, m.Spec, nil)
	if err == nil || !strings.Contains(err.Error(), "no-such-secret") {
		t.Fatalf("without the policy's consent: %v, want an error naming the Secret", err)
	}
	if err := aliased(t, e, sim, "HZ_TOKEN").Validate(ctx, m.Spec, nil); err != nil {
		t.Fatalf("with HZ_TOKEN allowed: %v", err)
	}
}
