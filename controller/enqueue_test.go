package controller

import (
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	testingclock "k8s.io/utils/clock/testing"
)

// A new leader first works on the Machines that need it: a Machine its
// first list finds settled is looked at PollInterval plus its offset
// later, by the leader's clock, while one still waiting for its instance
// is created at once. Before, a settled Machine was reconciled (a provider
// Get) as soon as it was listed, ahead of or alongside the others.
func TestNewLeaderLooksAtSettledMachinesLast(t *testing.T) {
	first := newHarness(t, nil)
	first.start()
	provision(t, first, "settled")
	first.stop()
	old, _ := first.machines.get("default", "settled")
	if !settled(old) {
		t.Fatalf("the provisioned Machine is not settled: %+v", old)
	}
	getsBefore := first.cloud.getsOf(old.UID)

	clk := testingclock.NewFakeClock(time.Now())
	next := newHarness(t, func(o *Options) {
		o.Machines = first.machines
		o.Providers = NewMapSource(map[string]provider.Interface{"mem": first.cloud})
		o.Clock = clk
	})
	next.machines, next.cloud = first.machines, first.cloud
	fresh := next.machines.Create(machine("fresh", "mem", `{"size":"s"}`))
	next.start()
	eventually(t, "the fresh Machine's instance created", func() bool {
		next.cloud.mu.Lock()
		defer next.cloud.mu.Unlock()
		return next.cloud.servers[fresh.UID] != nil
	})
	if n := next.cloud.getsOf(old.UID) - getsBefore; n != 0 {
		t.Fatalf("the settled Machine was looked at %d times before its turn", n)
	}
	// Its turn comes by the clock, within PollInterval + settledSpread.
	clk.Step(next.ctrl.opts.PollInterval + settledSpread)
	eventually(t, "the settled Machine looked at", func() bool {
		return next.cloud.getsOf(old.UID) > getsBefore
	})
}

func TestOffsetSpreadsKeys(t *testing.T) {
	const spread = time.Minute
	var buckets [6]int
	for i := range 600 {
		d := offset("default/machine-"+string(rune('a'+i%26))+time.Duration(i).String(), spread)
		if d < 0 || d >= spread {
			t.Fatalf("offset %v outside [0, %v)", d, spread)
		}
		buckets[d/(spread/6)]++
	}
	for i, n := range buckets {
		if n < 50 || n > 150 { // 100 expected in each sixth
			t.Errorf("sixth %d of the spread holds %d of 600 keys: not even", i, n)
		}
	}
	if offset("default/a", spread) != offset("default/a", spread) {
		t.Error("one key, two offsets")
	}
}
