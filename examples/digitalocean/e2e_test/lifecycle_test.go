//go:build !wasip1

package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/digitalocean/doprovider"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Every method through the .wasm: the droplet is made as upstream makes
// it, found by its UID tag, moved to a new UID and deleted.
func TestLifecycle(t *testing.T) {
	f := newFixture(t, dosim.Options{})
	m := f.machine("life", nil)
	if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
		t.Fatal(err)
	}
	if cfg, name, err := f.p.GetCloudConfig(f.ctx, m.Spec, nil); err != nil || cfg != "" || name != "" {
		t.Fatalf("GetCloudConfig = %q %q %v", cfg, name, err)
	}
	before := len(f.sim.Requests())
	labels, err := f.p.MachineMetricsLabels(f.ctx, m, nil)
	if err != nil || labels["size"] != "s-1vcpu-2gb" || labels["region"] != "fra1" || len(f.sim.Requests()) != before {
		t.Fatalf("MachineMetricsLabels = %v %v (%d API calls)", labels, err, len(f.sim.Requests())-before)
	}
	if spec, err := f.p.AddDefaults(f.ctx, m.Spec, nil); err != nil || string(spec.ProviderSpec.Value.Raw) != string(m.Spec.ProviderSpec.Value.Raw) {
		t.Fatalf("AddDefaults changed the spec: %v", err)
	}
	_, err = f.p.Get(f.ctx, m, nil)
	expectClass(t, err, runtime.ClassNotFound)

	inst, err := f.p.Create(f.ctx, m, f.data(), "#cloud-config\nhostname: "+m.Name)
	if err != nil {
		t.Fatal(err)
	}
	droplets := f.sim.Droplets()
	if len(droplets) != 1 {
		t.Fatalf("droplets after Create: %+v", droplets)
	}
	d := droplets[0]
	id := strconv.Itoa(d.ID)
	if inst.ID() != id || inst.Name() != m.Spec.Name || inst.ProviderID() != "digitalocean://"+id || inst.Status() != instance.StatusCreating {
		t.Fatalf("Create returned %s %s %s %s; droplet %+v", inst.ID(), inst.Name(), inst.ProviderID(), inst.Status(), d)
	}
	if d.Name != m.Spec.Name || d.Region != "fra1" || d.Size != "s-1vcpu-2gb" || d.Image != "ubuntu-24-04-x64" ||
		!strings.HasPrefix(d.UserData, "#cloud-config") || d.IPv6 || !d.PrivateNetworking || d.Backups || d.Monitoring ||
		!slices.Equal(d.Tags, []string{"machine-controller", string(m.UID)}) || len(d.SSHKeys) != 1 {
		t.Fatalf("the droplet is not what the spec asks for: %+v", d)
	}
	// The temporary key was uploaded (the droplet has it), then deleted.
	if keys := f.sim.SSHKeys(); len(keys) != 0 {
		t.Errorf("the temporary ssh key is left: %+v", keys)
	}
	stored := f.fresh(m)
	if stored.Annotations[doprovider.DropletIDAnnotation] != id {
		t.Errorf("annotations after Create: %v", stored.Annotations)
	}

	got, err := f.p.Get(f.ctx, stored, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != id || got.Status() != instance.StatusRunning || got.ProviderID() != "digitalocean://"+id {
		t.Fatalf("Get = %s %s %s", got.ID(), got.Status(), got.ProviderID())
	}
	ext, internal := 0, 0
	for _, typ := range got.Addresses() {
		switch typ {
		case corev1.NodeExternalIP:
			ext++
		case corev1.NodeInternalIP:
			internal++
		}
	}
	if ext != 1 || internal != 1 {
		t.Errorf("addresses %v: want the public IPv4 external, the private one internal", got.Addresses())
	}
	again, err := f.p.Create(f.ctx, stored, f.data(), "#cloud-config")
	if err != nil || again.ID() != id || len(f.sim.Droplets()) != 1 {
		t.Fatalf("a second Create: %v %v, %d droplets", again, err, len(f.sim.Droplets()))
	}

	migrateAndDelete(t, f, stored, d.ID)
}

// migrateAndDelete moves the Machine's droplet to a new UID — the old tag
// removed, as upstream — and deletes it.
func migrateAndDelete(t *testing.T, f *fixture, m *clusterv1alpha1.Machine, dropletID int) {
	t.Helper()
	newUID := types.UID(newUID(uidSeq.Add(1)))
	if err := f.p.MigrateUID(f.ctx, m, newUID, nil); err != nil {
		t.Fatal(err)
	}
	if tags := f.sim.Droplets()[0].Tags; !slices.Equal(tags, []string{"machine-controller", string(newUID)}) {
		t.Fatalf("tags after MigrateUID: %v", tags)
	}
	_, err := f.p.Get(f.ctx, m, nil)
	expectClass(t, err, runtime.ClassNotFound) // the old UID finds nothing, annotation or not
	migrated := m.DeepCopy()
	migrated.UID = newUID
	f.add(migrated)
	if got, err := f.p.Get(f.ctx, migrated, nil); err != nil || got.ID() != strconv.Itoa(dropletID) {
		t.Fatalf("Get by the new UID: %v %v", got, err)
	}
	// MigrateUID again finds nothing under the old UID and does nothing.
	if err := f.p.MigrateUID(f.ctx, m, newUID, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds nothing: done as well
		if done, err := f.p.Cleanup(f.ctx, migrated, f.data()); err != nil || !done {
			t.Fatalf("Cleanup = %v %v", done, err)
		}
	}
	_, err = f.p.Get(f.ctx, migrated, nil)
	expectClass(t, err, runtime.ClassNotFound)
}
