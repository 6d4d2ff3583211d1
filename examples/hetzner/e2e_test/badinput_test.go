//go:build !wasip1

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hetznertest"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime"
)

// The bad input of issue #16: each is a terminal error from Validate and
// from Create that says what is wrong, and leaves nothing in the cloud
// once the Machine is deleted.
func TestBadInputLeavesNothing(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		topology(t, f.sim)
		good := map[string]any{"networks": []string{"kubernetes"}, "firewalls": []string{"k8s-nodes"}, "placementGroupPrefix": "bad"}
		cases := []struct {
			name, want string
			extra      map[string]any
		}{
			{"unknown network", `network "nope"`, map[string]any{"networks": []string{"kubernetes", "nope"}}},
			{"unknown firewall", `firewall "nope"`, map[string]any{"firewalls": []string{"nope"}}},
			{"both public IPs off, no network", "assignPublicIPv4 and assignPublicIPv6", map[string]any{
				"networks": nil, "assignPublicIPv4": false, "assignPublicIPv6": map[string]any{"value": false}}},
			{"retired server type", `"cx21"`, map[string]any{"serverType": "cx21"}},
			{"retired image", `"ubuntu-20.04"`, map[string]any{"image": "ubuntu-20.04"}},
			{"numeric datacenter", "numeric", map[string]any{"location": nil, "datacenter": "1"}},
			{"datacenter and location", "at the same time", map[string]any{"datacenter": "fsn1-dc14"}},
			{"missing token secret", "machine-controller-hetzner", map[string]any{"token": hetznertest.TokenRef("machine-controller-hetzner-missing", "token")}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				extra := map[string]any{}
				for k, v := range good {
					extra[k] = v
				}
				for k, v := range c.extra {
					extra[k] = v
				}
				m := f.machine("bad", extra)
				// A missing Secret is NOT_FOUND from the host
				// (internal/hostmodule keyError), which the guest reports
				// as terminal, naming the Secret: a person must create it.
				class := func(err error) {
					expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
				}
				err := f.p.Validate(f.ctx, m.Spec, nil)
				class(err)
				want := c.want
				if c.name == "missing token secret" {
					want = "machine-controller-hetzner-missing"
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate: %v does not say %q", err, want)
				}
				_, err = f.p.Create(f.ctx, f.fresh(m), f.cluster.Data(), "")
				class(err)
				if c.name == "numeric datacenter" || c.name == "datacenter and location" {
					_, err := f.p.AddDefaults(f.ctx, m.Spec, nil)
					expectTerminal(t, err, clusterv1alpha1.InvalidConfigurationMachineError)
				}
				if c.name != "missing token secret" { // no token, no Delete
					deleteAll(t, f.p, f.ctx, f.clock, m)
				}
				expectEmpty(t, f.sim)
			})
		}
		t.Run("missing token secret, HZ_TOKEN allowed", func(t *testing.T) {
			t.Setenv("HZ_TOKEN", f.sim.Token())
			m := f.machine("fallback", map[string]any{"token": hetznertest.TokenRef("machine-controller-hetzner-missing", "token")})
			if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
				t.Fatalf("upstream falls back to HZ_TOKEN when the Secret cannot be read: %v", err)
			}
		})
		t.Run("any os with an explicit image", func(t *testing.T) {
			m := f.machine("flatcar", map[string]any{"image": "flatcar"})
			m = hetznertest.Machine(m.Name, string(m.UID), "flatcar", f.spec(map[string]any{"image": "flatcar"}))
			if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("server create fails after the group was made", func(t *testing.T) {
			// The group Create made for a server that never came is the
			// Machine's (annotated before the server create), and its
			// Delete removes it.
			f.sim.Inject(hcloudsim.Fault{Name: "500", Method: "POST", Path: "/v1/servers", Status: 500, Times: 1})
			m := f.machine("pgfail", good)
			_, err := f.p.Create(f.ctx, m, f.cluster.Data(), "")
			expectClass(t, err, runtime.ClassTransient)
			if g := f.sim.PlacementGroups(); len(g) != 1 || len(g[0].Servers) != 0 {
				t.Fatalf("groups after the failed create: %+v", g)
			}
			deleteAll(t, f.p, f.ctx, f.clock, m)
			expectEmpty(t, f.sim)
		})
		t.Run("placement group at its limit", func(t *testing.T) {
			// A group with the prefix that already holds ten servers is
			// not used: Create makes a second one.
			f.simPost(t, "/placement_groups", `{"name":"full-1","type":"spread"}`)
			var full int64
			for _, g := range f.sim.PlacementGroups() {
				full = g.ID
			}
			for i := 0; i < hcloudsim.PlacementGroupLimit; i++ {
				f.simPost(t, "/servers", fmt.Sprintf(`{"name":"filler-%d","server_type":"cx22","image":"ubuntu-24.04","placement_group":%d}`, i, full))
			}
			m := f.machine("pg", map[string]any{"placementGroupPrefix": "full"})
			if _, err := f.p.Create(f.ctx, m, f.cluster.Data(), ""); err != nil {
				t.Fatal(err)
			}
			groups := f.sim.PlacementGroups()
			if len(groups) != 2 || len(groups[1].Servers) != 1 || !strings.HasPrefix(groups[1].Name, "full-") {
				t.Fatalf("groups %+v", groups)
			}
			deleteAll(t, f.p, f.ctx, f.clock, m)
			if groups := f.sim.PlacementGroups(); len(groups) != 1 || groups[0].ID != full {
				t.Fatalf("after Delete: %+v", groups)
			}
			// What the other client made, it removes.
			for _, srv := range f.sim.Servers() {
				f.simDelete(t, fmt.Sprintf("/servers/%d", srv.ID))
			}
			wait.Until(t, "the other client's servers gone", func() bool { return len(f.sim.Servers()) == 0 })
			f.simDelete(t, fmt.Sprintf("/placement_groups/%d", full))
		})
	})
}

// simPost sends a create request to the simulator as another API client
// would, and fails the test unless it is answered 201.
func (f *fixture) simPost(t *testing.T, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.sim.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.sim.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
}

// simDelete sends a delete request to the simulator as another API client
// would, and fails the test on an error status.
func (f *fixture) simDelete(t *testing.T, path string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.sim.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+f.sim.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("DELETE %s: %d %s", path, resp.StatusCode, b)
	}
}
