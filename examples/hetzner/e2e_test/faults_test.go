//go:build !wasip1

package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/runtime"
)

// TestAPIFaults: every fault of the API is transient (the controller
// retries), never terminal, never a duplicate server.
func TestAPIFaults(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		m := f.machine("faults", nil)
		if _, err := f.f(m); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name     string
			fault    hcloudsim.Fault
			minRetry time.Duration // 0: transient without a hint
		}{
			{"500", hcloudsim.Fault{Status: 500}, 5 * time.Second},
			{"503 with Retry-After", hcloudsim.Fault{Status: 503, Header: map[string]string{"Retry-After": "42"}}, 42 * time.Second},
			{"429", hcloudsim.Fault{Status: 429}, time.Second},
			{"garbage JSON", hcloudsim.Fault{Body: "<html>oops</html>"}, 0},
			{"garbage error body", hcloudsim.Fault{Status: 502, Body: "Bad Gateway"}, 5 * time.Second},
			{"truncated body", hcloudsim.Fault{Truncate: true}, 0},
			{"dropped connection", hcloudsim.Fault{Drop: true}, 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.fault.Name, c.fault.Method, c.fault.Path = c.name, "GET", "/v1/servers"
				inj := f.sim.Inject(c.fault)
				defer inj.Remove()
				_, err := f.p.Get(f.ctx, m, nil)
				if c.minRetry > 0 {
					expectRetry(t, err, c.minRetry)
				} else {
					expectClass(t, err, runtime.ClassTransient)
				}
				if inj.Hits() == 0 {
					t.Fatal("fault never hit")
				}
				// And Create, which looks for the server first, neither
				// fails terminally nor makes a second server.
				_, err = f.p.Create(f.ctx, f.fresh(m), f.cluster.Data(), "")
				expectClass(t, err, runtime.ClassTransient)
				inj.Remove()
				if _, err := f.p.Get(f.ctx, m, nil); err != nil {
					t.Fatalf("after the fault: %v", err)
				}
				if n := len(f.serversOf(m)); n != 1 {
					t.Fatalf("%d servers", n)
				}
			})
		}
		t.Run("rate limit exhausted", func(t *testing.T) {
			f.sim.SetRateLimitRemaining(0)
			_, err := f.p.Get(f.ctx, m, nil)
			expectRetry(t, err, time.Second)
			f.sim.SetRateLimitRemaining(3600)
		})
		t.Run("latency past the call deadline", func(t *testing.T) {
			inj := f.sim.Inject(hcloudsim.Fault{Path: "/v1/servers", Latency: 2 * time.Second})
			defer inj.Remove()
			ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
			defer cancel()
			_, err := f.p.Get(ctx, m, nil)
			if err == nil || (runtime.ErrorClass(err) != runtime.ClassTimeout && runtime.ErrorClass(err) != runtime.ClassTransient) {
				t.Fatalf("want a timeout or transient error, got %v (%s)", err, runtime.ErrorClass(err))
			}
			if !errors.Is(err, context.DeadlineExceeded) && runtime.ErrorClass(err) == runtime.ClassTimeout {
				t.Fatalf("timeout does not match context.DeadlineExceeded: %v", err)
			}
		})
		t.Run("delete fails with 500, then succeeds", func(t *testing.T) {
			inj := f.sim.Inject(hcloudsim.Fault{Method: "DELETE", Path: "/v1/servers/*", Status: 500})
			err := f.p.Delete(f.ctx, f.fresh(m), f.cluster.Data())
			expectRetry(t, err, time.Second)
			if len(f.serversOf(m)) != 1 || !has(f.fresh(m).Finalizers, hzprovider.Finalizer) {
				t.Fatal("a failed Delete must keep the server's finalizer")
			}
			inj.Remove()
			f.deleteDone(t, m)
			if len(f.serversOf(m)) != 0 || has(f.fresh(m).Finalizers, hzprovider.Finalizer) {
				t.Fatal("server or finalizer left after Delete")
			}
		})
	})
}

// f is Create with the fixture's data (a helper for readability).
func (f *fixture) f(m *clusterv1alpha1.Machine) (instance.Instance, error) {
	return f.p.Create(f.ctx, m, f.cluster.Data(), "#cloud-config")
}

// TestInterruptedCreate: the server exists but its creator never learnt
// it (the answer was lost, or the annotation could not be written). The
// next Get finds it by label and the next Create does not duplicate it.
func TestInterruptedCreate(t *testing.T) {
	forEach(t, hcloudsim.Options{}, func(t *testing.T, f *fixture) {
		t.Run("answer lost", func(t *testing.T) {
			m := f.machine("lost", nil)
			inj := f.sim.Inject(hcloudsim.Fault{Name: "lost", Method: "POST", Path: "/v1/servers", After: true, Drop: true, Times: 1})
			_, err := f.f(m)
			expectClass(t, err, runtime.ClassTransient)
			if inj.Hits() != 1 || len(f.serversOf(m)) != 1 {
				t.Fatalf("hits %d, servers %+v", inj.Hits(), f.serversOf(m))
			}
			cur := f.fresh(m)
			if !has(cur.Finalizers, hzprovider.Finalizer) || cur.Annotations[hzprovider.ServerIDAnnotation] != "" {
				t.Fatalf("finalizer must be there, annotation not: %v %v", cur.Finalizers, cur.Annotations)
			}
			inst, err := f.p.Get(f.ctx, cur, nil)
			if err != nil || inst.Status() != instance.StatusCreating {
				t.Fatalf("Get: %v %v", inst, err)
			}
			inst, err = f.f(cur)
			if err != nil {
				t.Fatal(err)
			}
			if s := f.serversOf(m); len(s) != 1 || inst.ProviderID() != "hcloud://"+itoa(s[0].ID) {
				t.Fatalf("duplicate or wrong server: %+v %v", s, inst.ProviderID())
			}
			if f.fresh(m).Annotations[hzprovider.ServerIDAnnotation] != inst.ID() {
				t.Fatal("retry did not record the server")
			}
			if f.deleteDone(t, m); len(f.serversOf(m)) != 0 {
				t.Fatalf("cleanup left %+v", f.serversOf(m))
			}
		})
		t.Run("annotation write fails", func(t *testing.T) {
			m := f.machine("noannot", nil)
			f.cluster.Machines.FailUpdate = func(u *clusterv1alpha1.Machine) error {
				if u.Name == m.Name && u.Annotations[hzprovider.ServerIDAnnotation] != "" {
					return errors.New("controller crashed")
				}
				return nil
			}
			_, err := f.f(m)
			f.cluster.Machines.FailUpdate = nil
			expectClass(t, err, runtime.ClassTransient)
			if len(f.serversOf(m)) != 1 {
				t.Fatalf("servers %+v", f.serversOf(m))
			}
			if _, err := f.p.Get(f.ctx, f.fresh(m), nil); err != nil {
				t.Fatalf("Get does not find the server by label: %v", err)
			}
			if _, err := f.f(f.fresh(m)); err != nil {
				t.Fatal(err)
			}
			if len(f.serversOf(m)) != 1 || f.fresh(m).Annotations[hzprovider.ServerIDAnnotation] == "" {
				t.Fatalf("servers %+v annotations %v", f.serversOf(m), f.fresh(m).Annotations)
			}
			f.deleteDone(t, m)
		})
		t.Run("conflicting writer", func(t *testing.T) {
			m := f.machine("conflict", nil)
			f.cluster.Machines.Touch(m.Namespace, m.Name) // the passed Machine is now stale
			if _, err := f.f(m); err != nil {
				t.Fatal(err)
			}
			cur := f.fresh(m)
			if !has(cur.Finalizers, hzprovider.Finalizer) || cur.Annotations[hzprovider.ServerIDAnnotation] == "" {
				t.Fatalf("updates lost on conflict: %v %v", cur.Finalizers, cur.Annotations)
			}
			f.deleteDone(t, cur)
		})
		if len(f.sim.Servers()) != 0 || len(f.sim.SSHKeys()) != 0 {
			t.Fatalf("left behind: %+v %+v", f.sim.Servers(), f.sim.SSHKeys())
		}
	})
}

func itoa(n int64) string { return formatInt(n) }

func formatInt(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestStuckInitializing: a server that never leaves initializing is
// reported as creating, and is neither duplicated nor left behind.
func TestStuckInitializing(t *testing.T) {
	forEach(t, hcloudsim.Options{BootDuration: 50 * time.Millisecond}, func(t *testing.T, f *fixture) {
		m := f.machine("stuck", nil)
		f.sim.StickInitializing(m.Spec.Name, true)
		if _, err := f.f(m); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			f.clock.advance(100 * time.Millisecond)
			inst, err := f.p.Get(f.ctx, f.fresh(m), nil)
			if err != nil || inst.Status() != instance.StatusCreating {
				t.Fatalf("Get: %v %v", inst, err)
			}
			if _, err := f.f(f.fresh(m)); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(f.serversOf(m)); n != 1 {
			t.Fatalf("%d servers", n)
		}
		f.deleteDone(t, m)
		if n := len(f.serversOf(m)); n != 0 || has(f.fresh(m).Finalizers, hzprovider.Finalizer) {
			t.Fatalf("%d servers left, finalizers %v", n, f.fresh(m).Finalizers)
		}
	})
}
