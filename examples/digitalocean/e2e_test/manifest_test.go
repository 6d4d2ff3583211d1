//go:build !wasip1

package e2e

import (
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"

	"sigs.k8s.io/yaml"
)

// testdata/machine.yaml, the Machine the README runs through the CLI, is
// in upstream's shape (its cloudProviderSpec decodes strictly as
// upstream's RawConfig) and goes through its life unchanged, its token
// read from testdata/secret.yaml's Secret.
func TestManifest(t *testing.T) {
	var m clusterv1alpha1.Machine
	if err := yaml.UnmarshalStrict(readTestdata("machine.yaml"), &m); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeUpstream(t, m.Spec.ProviderSpec.Value.Raw); err != nil {
		t.Fatalf("testdata/machine.yaml is not upstream's RawConfig: %v", err)
	}
	f := newFixture(t, dosim.Options{})
	f.add(&m)
	if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
		t.Fatal(err)
	}
	inst, err := f.p.Create(f.ctx, &m, f.data(), "#cloud-config")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.p.Get(f.ctx, f.fresh(&m), nil); err != nil || got.ID() != inst.ID() {
		t.Fatalf("Get = %v %v", got, err)
	}
	if done, err := f.p.Cleanup(f.ctx, f.fresh(&m), f.data()); err != nil || !done {
		t.Fatalf("Cleanup = %v %v", done, err)
	}
}
