//go:build !wasip1

package e2e

import (
	"testing"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/runtime"
)

// Each Create installs a throw-away SSH key that the provider generates
// with crypto/rand, as upstream does. Two instances of the module (two
// loads, so two pools) must generate two different keys: with a fixed
// random stream, as random_get was without the random capability before
// c703ed6, every droplet got the same, predictable key. make test-wasmtime
// runs this on wasmtime too.
func TestTwoInstancesGenerateDifferentKeys(t *testing.T) {
	f := newFixture(t, dosim.Options{})
	other, err := f.rt.Load(f.ctx, f.wasm, runtime.WithName("digitalocean-second"), runtime.WithPolicy(policy(f.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(f.ctx)
	var keys []string
	for i, p := range []*runtime.Provider{f.p, other} {
		m := f.machine([]string{"rand-a", "rand-b"}[i], nil)
		if _, err := p.Create(f.ctx, m, f.data(), "#cloud-config\n"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := f.p.Delete(f.ctx, f.fresh(m), f.data()); err != nil {
				t.Errorf("Delete %s: %v", m.Name, err)
			}
		}()
	}
	for _, d := range f.sim.Droplets() {
		if len(d.SSHKeys) != 1 {
			t.Fatalf("droplet %s has keys %v, want the one throw-away key", d.Name, d.SSHKeys)
		}
		keys = append(keys, d.SSHKeys[0])
	}
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Fatalf("the two instances installed keys %v: the same \"random\" key on every droplet", keys)
	}
}
