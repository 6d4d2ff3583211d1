//go:build !wasip1

package e2e

import (
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hetznertest"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deleteDone calls the seed Delete until it returns nil, with the Machine
// as stored, as the controller does; every answer before must be the
// transient "in progress" of a server still deleting. It returns the
// number of calls.
func (f *fixture) deleteDone(t *testing.T, m *clusterv1alpha1.Machine) int {
	t.Helper()
	const max = 200
	for calls := 1; calls <= max; calls++ {
		err := f.p.Delete(f.ctx, f.fresh(m), f.cluster.Data())
		if err == nil {
			return calls
		}
		if !errors.Is(err, runtime.ErrDeletionInProgress) {
			t.Fatalf("Delete call %d: %v", calls, err)
		}
		expectClass(t, err, runtime.ClassTransient)
		f.clock.advance(10 * time.Millisecond)
	}
	t.Fatalf("Delete still in progress after %d calls", max)
	return 0
}

// deletes counts the DELETE requests of a server the simulator answered.
func (f *fixture) deletes(id int64) int {
	n := 0
	for _, r := range f.sim.Requests() {
		if r.Method == "DELETE" && r.Path == "/v1/servers/"+itoa(id) {
			n++
		}
	}
	return n
}

// TestAsyncDelete: the simulator keeps a deleted server "deleting" for two
// reads. Delete starts the deletion once and answers IN_PROGRESS while the
// server is listed, success once it is gone: Cleanup returns false, false,
// true, and the seed's Delete a retriable ErrDeletionInProgress, then nil.
func TestAsyncDelete(t *testing.T) {
	forEach(t, hcloudsim.Options{DeleteReads: 2}, func(t *testing.T, f *fixture) {
		if !f.raw.Declared().Has(abi.CapAsyncDelete) {
			t.Fatalf("the module declares %v, without async_delete", f.raw.Declared().Names())
		}
		t.Run("Cleanup", func(t *testing.T) {
			m := f.machine("cleanup", nil)
			if _, err := f.f(m); err != nil {
				t.Fatal(err)
			}
			srv := f.serversOf(m)[0]
			calls := f.raw
			// The first call issues the DELETE and reads the server once
			// (still deleting); the second lists it deleting; the third
			// finds it gone.
			for i, want := range []bool{false, false, true} {
				done, err := calls.Cleanup(f.ctx, f.fresh(m), f.cluster.Data())
				if err != nil || done != want {
					t.Fatalf("Cleanup call %d = (%v, %v), want (%v, nil)", i+1, done, err, want)
				}
				cur := f.fresh(m)
				if !want {
					if s := f.serversOf(m); len(s) != 1 || s[0].Status != "deleting" {
						t.Fatalf("after Cleanup call %d: servers %+v, want one deleting", i+1, s)
					}
					if !has(cur.Finalizers, hzprovider.Finalizer) {
						t.Fatalf("finalizer removed while the server is deleting: %v", cur.Finalizers)
					}
					continue
				}
				if s := f.serversOf(m); len(s) != 0 || has(cur.Finalizers, hzprovider.Finalizer) {
					t.Fatalf("after the last Cleanup: servers %+v, finalizers %v", s, cur.Finalizers)
				}
			}
			if n := f.deletes(srv.ID); n != 1 {
				t.Fatalf("%d DELETE requests for server %d, want 1: a deleting server is not deleted again", n, srv.ID)
			}
			// Nothing left: done at once.
			if done, err := calls.Cleanup(f.ctx, f.fresh(m), f.cluster.Data()); !done || err != nil {
				t.Fatalf("Cleanup of a deleted Machine = (%v, %v)", done, err)
			}
		})
		t.Run("seed Delete", func(t *testing.T) {
			m := f.machine("seeddelete", nil)
			if _, err := f.f(m); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 2; i++ {
				err := f.p.Delete(f.ctx, f.fresh(m), f.cluster.Data())
				if !errors.Is(err, runtime.ErrDeletionInProgress) {
					t.Fatalf("Delete call %d: %v, want ErrDeletionInProgress", i, err)
				}
				expectRetry(t, err, hzprovider.DeleteRetryAfter)
			}
			if err := f.p.Delete(f.ctx, f.fresh(m), f.cluster.Data()); err != nil {
				t.Fatalf("Delete call 3: %v", err)
			}
			if s := f.serversOf(m); len(s) != 0 || has(f.fresh(m).Finalizers, hzprovider.Finalizer) {
				t.Fatalf("servers %+v, finalizers %v", s, f.fresh(m).Finalizers)
			}
		})
		t.Run("volumes detached before the delete", func(t *testing.T) {
			m := f.machine("asyncvol", nil)
			if _, err := f.f(m); err != nil {
				t.Fatal(err)
			}
			srv := f.serversOf(m)[0]
			v, _ := f.sim.AddVolume("pvc-async", "fsn1", 10, srv.ID)
			if err := f.cluster.AddCSIVolume(f.ctx, "pv-"+m.Name, v); err != nil {
				t.Fatal(err)
			}
			if n := f.deleteDone(t, m); n != 3 {
				t.Fatalf("Delete took %d calls, want 3", n)
			}
			for _, a := range f.sim.AutoDetached() {
				if a == v {
					t.Fatalf("volume %d was still attached when the server was deleted", v)
				}
			}
		})
	})
}

// TestMetricsForMachines: the provider counts Machines by server type and
// location from their providerSpecs alone.
func TestMetricsForMachines(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		f.sim.ResetRequests()
		ms := []*clusterv1alpha1.Machine{
			f.newMachine("m", nil),
			f.newMachine("m", nil),
			f.newMachine("m", map[string]any{"serverType": "cx32", "location": nil, "datacenter": "nbg1-dc3"}),
			f.newMachine("m", map[string]any{"serverType": map[string]any{"value": "cax11"}, "location": "hel1"}),
			f.newMachine("m", map[string]any{"serverType": hetznertest.TokenRef(tokenSecret, "type")}),
			hetznertest.RawSpec("raw", "uid-raw", `{"cloudProvider":"hetzner"}`),
		}
		list := clusterv1alpha1.MachineList{TypeMeta: metav1.TypeMeta{Kind: "MachineList", APIVersion: "cluster.k8s.io/v1alpha1"}}
		for _, m := range ms {
			list.Items = append(list.Items, *m)
		}
		if err := f.raw.SetMetricsForMachines(f.ctx, list, nil); err != nil {
			t.Fatal(err)
		}
		got := map[[2]string]float64{}
		for _, s := range f.raw.MetricSamples() {
			if s.Name != hzprovider.MachinesMetric || s.Type != "gauge" || s.Help == "" || len(s.Labels) != 2 {
				t.Fatalf("sample %+v", s)
			}
			got[[2]string{s.Labels["server_type"], s.Labels["location"]}] = s.Value
		}
		want := map[[2]string]float64{
			{"cx22", "fsn1"}: 2, {"cx32", "nbg1"}: 1, {"cax11", "hel1"}: 1,
			{"unknown", "fsn1"}: 1, {"unknown", "unknown"}: 1,
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("samples %v, want %v", got, want)
		}
		if n := len(f.sim.Requests()); n != 0 {
			t.Fatalf("SetMetricsForMachines made %d API requests", n)
		}
		// The next call replaces the samples: an empty list, none left.
		if err := f.raw.SetMetricsForMachines(f.ctx, clusterv1alpha1.MachineList{}, nil); err != nil {
			t.Fatal(err)
		}
		if s := f.raw.MetricSamples(); len(s) != 0 {
			names := make([]string, 0, len(s))
			for _, x := range s {
				names = append(names, x.Name)
			}
			sort.Strings(names)
			t.Fatalf("samples after an empty list: %v", names)
		}
	})
}
