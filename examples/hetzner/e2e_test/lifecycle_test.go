//go:build !wasip1

package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hetznertest"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
)

func TestAddDefaults(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		m := f.machine("defaults", map[string]any{"location": nil, "datacenter": "hel1-dc2"})
		spec, err := f.p.AddDefaults(f.ctx, m.Spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(f.sim.Requests()); n != 0 {
			t.Fatalf("AddDefaults made %d API calls", n)
		}
		var v struct {
			OperatingSystem   string         `json:"operatingSystem"`
			CloudProviderSpec map[string]any `json:"cloudProviderSpec"`
		}
		if err := json.Unmarshal(spec.ProviderSpec.Value.Raw, &v); err != nil {
			t.Fatal(err)
		}
		cps := v.CloudProviderSpec
		if cps["location"] != "hel1" || cps["datacenter"] != nil || cps["image"] != "ubuntu-24.04" || v.OperatingSystem != "ubuntu" {
			t.Fatalf("defaults not applied: %v", cps)
		}
		if cps["serverType"] != "cx22" || cps["endpoint"] != f.sim.URL {
			t.Fatalf("other fields changed: %v", cps)
		}
		// The defaulted spec validates (location, type and image exist).
		if err := f.p.Validate(f.ctx, spec, nil); err != nil {
			t.Fatal(err)
		}
		// Defaults are idempotent.
		again, err := f.p.AddDefaults(f.ctx, spec, nil)
		if err != nil || string(again.ProviderSpec.Value.Raw) != string(spec.ProviderSpec.Value.Raw) {
			t.Fatalf("second AddDefaults changed the spec: %v\n%s\n%s", err, spec.ProviderSpec.Value.Raw, again.ProviderSpec.Value.Raw)
		}
	})
}

func TestLifecycle(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		m := f.machine("life", nil)
		if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
			t.Fatal(err)
		}
		if cfg, name, err := f.p.GetCloudConfig(f.ctx, m.Spec, nil); err != nil || cfg != "" || name != "" {
			t.Fatalf("GetCloudConfig = %q %q %v", cfg, name, err)
		}
		labels, err := f.p.MachineMetricsLabels(f.ctx, m, nil)
		if err != nil || labels["size"] != "cx22" || labels["location"] != "fsn1" || labels["dc"] != "" {
			t.Fatalf("MachineMetricsLabels = %v %v", labels, err)
		}
		before := len(f.sim.Requests())
		if _, err := f.p.MachineMetricsLabels(f.ctx, m, nil); err != nil || len(f.sim.Requests()) != before {
			t.Fatalf("MachineMetricsLabels called the API: %v", err)
		}

		_, err = f.p.Get(f.ctx, m, nil)
		expectClass(t, err, runtime.ClassNotFound)

		inst, err := f.p.Create(f.ctx, m, f.cluster.Data(), "#cloud-config\nhostname: "+m.Name)
		if err != nil {
			t.Fatal(err)
		}
		servers := f.serversOf(m)
		if len(servers) != 1 {
			t.Fatalf("servers after Create: %+v", servers)
		}
		s := servers[0]
		id := strconv.FormatInt(s.ID, 10)
		if inst.ID() != id || inst.ProviderID() != "hcloud://"+id || inst.Name() != m.Spec.Name || inst.Status() != instance.StatusCreating {
			t.Fatalf("instance %+v vs server %+v", inst, s)
		}
		if s.Name != m.Spec.Name || !strings.Contains(s.UserData, "hostname: "+m.Name) || s.Labels["cluster"] != "e2e" {
			t.Fatalf("server %+v", s)
		}
		if keys := f.sim.SSHKeys(); len(keys) != 0 {
			t.Fatalf("temporary ssh key left behind: %+v", keys)
		}
		var createdKey bool
		for _, r := range f.sim.Requests() {
			createdKey = createdKey || (r.Method == "POST" && r.Path == "/v1/ssh_keys" && r.Status == 201)
		}
		if !createdKey {
			t.Fatal("Create made no temporary ssh key")
		}

		// The finalizer was written before the server was created, the
		// annotation after.
		cur := f.fresh(m)
		if !has(cur.Finalizers, hzprovider.Finalizer) || cur.Annotations[hzprovider.ServerIDAnnotation] != id {
			t.Fatalf("machine after Create: finalizers %v annotations %v", cur.Finalizers, cur.Annotations)
		}
		events := f.cluster.Machines.Events(m.Name)
		var createdAt time.Time
		for _, r := range f.sim.Requests() {
			if r.Method == "POST" && r.Path == "/v1/servers" {
				createdAt = r.Time
			}
		}
		if len(events) < 2 || !has(events[0].Finalizers, hzprovider.Finalizer) || !events[0].Time.Before(createdAt) ||
			events[len(events)-1].Annotations[hzprovider.ServerIDAnnotation] != id || events[len(events)-1].Time.Before(createdAt) {
			t.Fatalf("finalizer must be added before the server is created (at %v), annotation after: %+v", createdAt, events)
		}

		// Create again (a controller retry): no second server.
		if _, err := f.p.Create(f.ctx, cur, f.cluster.Data(), "#cloud-config"); err != nil {
			t.Fatal(err)
		}
		if n := len(f.serversOf(m)); n != 1 {
			t.Fatalf("second Create made %d servers", n)
		}

		// Get: creating, then running once booted, with addresses.
		wait.For(t, "the server running", func() (bool, string) {
			inst, err = f.p.Get(f.ctx, cur, nil)
			if err != nil {
				t.Fatal(err)
			}
			return inst.Status() == instance.StatusRunning, string(inst.Status())
		})
		addrs := inst.Addresses()
		if addrs[s.IPv4] != corev1.NodeExternalIP || len(addrs) != 2 {
			t.Fatalf("addresses %v, want %s and an IPv6", addrs, s.IPv4)
		}
		for a, typ := range addrs {
			if strings.Contains(a, ":") && (!strings.HasSuffix(a, "::1") || typ != corev1.NodeExternalIP) {
				t.Fatalf("IPv6 address %s %s, want the ::1 of the /64", a, typ)
			}
		}

		// MigrateUID relabels; the old UID finds nothing, the new one the
		// same server.
		if err := f.p.MigrateUID(f.ctx, cur, "migrated-"+cur.UID, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.p.Get(f.ctx, cur, nil); runtime.ErrorClass(err) != runtime.ClassNotFound {
			t.Fatalf("Get by old UID after migration: %v", err)
		}
		cur.UID = "migrated-" + cur.UID
		f.cluster.Machines.Delete(cur.Namespace, cur.Name)
		cur = f.cluster.Machines.Add(cur)
		inst, err = f.p.Get(f.ctx, cur, nil)
		if err != nil || inst.ID() != id {
			t.Fatalf("Get by new UID: %v %v", inst, err)
		}
		if srv := f.serversOf(cur); len(srv) != 1 || srv[0].Labels["cluster"] != "e2e" {
			t.Fatalf("migration lost labels: %+v", srv)
		}

		// Two CSI volumes of PVs and one unrelated volume attached.
		v1, _ := f.sim.AddVolume("pvc-a", "fsn1", 10, s.ID)
		v2, _ := f.sim.AddVolume("pvc-b", "fsn1", 10, s.ID)
		other, _ := f.sim.AddVolume("scratch", "fsn1", 10, s.ID)
		for i, v := range []int64{v1, v2} {
			if err := f.cluster.AddCSIVolume(f.ctx, "pv-"+cur.Name+"-"+strconv.Itoa(i), v); err != nil {
				t.Fatal(err)
			}
		}
		f.sim.ResetRequests()
		// The server deletes asynchronously (for the simulator's
		// DeleteDelay): Delete is called until it is done.
		f.deleteDone(t, cur)
		if n := len(f.serversOf(cur)); n != 0 {
			t.Fatalf("%d servers after Delete", n)
		}
		var detached []string
		deleteAt := -1
		for i, r := range f.sim.Requests() {
			if r.Method == "POST" && strings.HasSuffix(r.Path, "/actions/detach") {
				if deleteAt >= 0 {
					t.Fatalf("volume detached after the server delete: %+v", f.sim.Requests())
				}
				detached = append(detached, r.Path)
			}
			if r.Method == "DELETE" && r.Path == "/v1/servers/"+id {
				deleteAt = i
			}
		}
		if len(detached) != 2 || deleteAt < 0 {
			t.Fatalf("detached %v, delete at %d: %+v", detached, deleteAt, f.sim.Requests())
		}
		auto := f.sim.AutoDetached()
		if len(auto) != 1 || auto[0] != other {
			t.Fatalf("volumes left attached at delete: %v, want only the unrelated %d", auto, other)
		}
		for _, v := range f.sim.Volumes() {
			if (v.ID == v1 || v.ID == v2) && v.Server != nil {
				t.Fatalf("volume %d still attached", v.ID)
			}
		}
		if len(f.sim.Volumes()) != 3 {
			t.Fatalf("a volume was deleted with the server: %+v", f.sim.Volumes())
		}
		cur = f.fresh(cur)
		if has(cur.Finalizers, hzprovider.Finalizer) {
			t.Fatalf("finalizer not removed: %v", cur.Finalizers)
		}
		_, err = f.p.Get(f.ctx, cur, nil)
		expectClass(t, err, runtime.ClassNotFound)
		// Delete of a Machine whose server is gone succeeds.
		if err := f.p.Delete(f.ctx, cur, f.cluster.Data()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestValidateBadInput(t *testing.T) {
	forEach(t, hcloudsim.Options{ReadOnlyTokens: []string{roToken}}, func(t *testing.T, f *fixture) {
		cases := []struct {
			name  string
			extra map[string]any
			os    string
		}{
			{"wrong token", map[string]any{"token": hetznertest.TokenRef(wrongSecret, "token")}, ""},
			{"unknown location", map[string]any{"location": "atlantis1"}, ""},
			{"unknown datacenter", map[string]any{"location": nil, "datacenter": "fsn1-dc99"}, ""},
			{"unknown server type", map[string]any{"serverType": "cx9000"}, ""},
			{"unknown image", map[string]any{"image": "windows-95"}, ""},
			{"image of another architecture only", map[string]any{"image": "ubuntu-18.04"}, ""},
			{"location and datacenter", map[string]any{"datacenter": "fsn1-dc14"}, ""},
			{"unsupported os", nil, "windows"},
			{"no server type", map[string]any{"serverType": nil}, ""},
			{"unknown field", map[string]any{"serverTyp": "cx22"}, ""},
			{"wrong type", map[string]any{"labels": "not-a-map"}, ""},
			{"secret key missing", map[string]any{"token": hetznertest.TokenRef(tokenSecret, "nope")}, ""},
			{"unknown network", map[string]any{"networks": []string{"n1"}}, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				m := f.machine("bad", c.extra)
				if c.os != "" {
					m = hetznertest.Machine(m.Name, string(m.UID), c.os, f.spec(c.extra))
				}
				expectTerminal(t, f.p.Validate(f.ctx, m.Spec, nil), clusterv1alpha1.InvalidConfigurationMachineError)
			})
		}
		t.Run("no token", func(t *testing.T) {
			m := f.machine("notoken", map[string]any{"token": nil})
			expectTerminal(t, f.p.Validate(f.ctx, m.Spec, nil), clusterv1alpha1.InvalidConfigurationMachineError)
		})
		t.Run("token from HZ_TOKEN", func(t *testing.T) {
			t.Setenv("HZ_TOKEN", "sim-token")
			m := f.machine("envtoken", map[string]any{"token": nil})
			if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
				t.Fatal(err)
			}
		})
		for _, raw := range []string{`{"cloudProvider":"hetzner","cloudProviderSpec":`, `[1,2]`, `{"cloudProvider":"hetzner"}`} {
			t.Run("malformed providerSpec "+raw, func(t *testing.T) {
				m := hetznertest.RawSpec("raw", "uid-raw", raw)
				expectTerminal(t, f.p.Validate(f.ctx, m.Spec, nil), clusterv1alpha1.InvalidConfigurationMachineError)
				_, err := f.p.Create(f.ctx, m, f.cluster.Data(), "")
				expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
			})
		}
		t.Run("create with wrong token", func(t *testing.T) {
			m := f.machine("wrongtoken", map[string]any{"token": hetznertest.TokenRef(wrongSecret, "token")})
			_, err := f.p.Create(f.ctx, m, f.cluster.Data(), "")
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
			_, err = f.p.Get(f.ctx, m, nil)
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
		})
		t.Run("create with read-only token", func(t *testing.T) {
			m := f.machine("readonly", map[string]any{"token": hetznertest.TokenRef(roSecret, "token")})
			if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
				t.Fatalf("a read-only token validates: %v", err)
			}
			_, err := f.p.Create(f.ctx, m, f.cluster.Data(), "")
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
		})
		t.Run("create with unknown server type", func(t *testing.T) {
			m := f.machine("badtype", map[string]any{"serverType": "cx9000"})
			_, err := f.p.Create(f.ctx, m, f.cluster.Data(), "")
			expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
		})
		if n := len(f.sim.Servers()); n != 0 {
			t.Fatalf("bad input created %d servers", n)
		}
		if n := len(f.sim.SSHKeys()); n != 0 {
			t.Fatalf("bad input left %d ssh keys", n)
		}
	})
}
