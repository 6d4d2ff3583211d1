//go:build !wasip1

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/runtime"
)

// TestPacedAgainstARateLimitedCloud: the simulator allows 40 requests a
// second (burst 10) and answers 429 past that; the provider's policy
// paces it a little under, in the host (the scale harness runs the same
// at Hetzner-like 10 requests a second; here the rates are higher so
// that the test takes seconds). Eight machines are created,
// waited for and deleted at once (the pool's four instances busy): the
// simulator never sees more than its rate plus burst in any second,
// refuses nothing, and no call fails — throttling made them slower, not
// wrong.
func TestPacedAgainstARateLimitedCloud(t *testing.T) {
	const cloudRPS, cloudBurst = 40, 10
	forEach(t, hcloudsim.Options{RequestsPerSecond: cloudRPS, Burst: cloudBurst}, func(t *testing.T, f *fixture) {
		pol := policy()
		pol.HTTPRequestsPerSecond, pol.HTTPBurst = 32, 8
		p, err := f.rt.Load(context.Background(), f.wasmPath, runtime.WithName("paced-"+t.Name()), runtime.WithPolicy(pol))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			m := f.machine(fmt.Sprintf("paced-%d", i), nil)
			wg.Go(func() {
				if err := f.lifecycle(p, m); err != nil {
					errs <- fmt.Errorf("%s: %w", m.Name, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		st := f.sim.RequestStats()
		pacing := p.HTTPPacing()
		t.Logf("%v: %d requests accepted, %d refused (429), at most %d in a second; host: %d requests waited %v in all",
			time.Since(start).Round(time.Millisecond), st.Accepted, st.RateLimited, st.MaxAcceptedPerSecond, pacing.Waits, pacing.Waited.Round(time.Millisecond))
		if st.MaxAcceptedPerSecond > cloudRPS+cloudBurst {
			t.Errorf("the simulator accepted %d requests in one second (limit %d + burst %d)", st.MaxAcceptedPerSecond, cloudRPS, cloudBurst)
		}
		if st.RateLimited != 0 {
			t.Errorf("the simulator refused %d requests: the host did not keep under its limit", st.RateLimited)
		}
		if pacing.Waits == 0 {
			t.Error("no request waited: the test did not exercise the pacing")
		}
	})
}

// lifecycle creates m's server with p, waits until it runs and deletes it
// until Cleanup is done, letting the simulator's time pass.
func (f *fixture) lifecycle(p *runtime.Provider, m *clusterv1alpha1.Machine) error {
	if _, err := p.Create(f.ctx, f.fresh(m), f.cluster.Data(), "#cloud-config"); err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	for {
		inst, err := p.Get(f.ctx, f.fresh(m), nil)
		if err != nil {
			return fmt.Errorf("Get: %w", err)
		}
		if inst.Status() == instance.StatusRunning {
			break
		}
		f.clock.advance(100 * time.Millisecond)
	}
	for {
		done, err := p.Cleanup(f.ctx, f.fresh(m), f.cluster.Data())
		if err != nil {
			return fmt.Errorf("Cleanup: %w", err)
		}
		if done {
			return nil
		}
		f.clock.advance(100 * time.Millisecond)
	}
}
