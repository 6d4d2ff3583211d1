package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
)

// A lazy provider (a policy with an idle timeout) serves through the
// registry: the smoke call's instance is reaped, a call starts another;
// a reload onto a version that has no instance left pre-warms none, and
// the new version's smoke instance is reaped in turn.
func TestLazyProviderThroughRegistry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	policy := &runtime.Policy{IdleTimeout: runtime.Duration(20 * time.Millisecond)}
	if err := f.reg.Register(ctx, "lazy", guest(t, "v1", ""), policy); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("lazy")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's pool reaps on the wall clock (the registry's fake one
	// is for the registry's own timers): waitFor checks every recheck.
	waitReapedAll := func(p *runtime.Provider) runtime.PoolStats {
		t.Helper()
		f.waitFor(t, "instances reaped", func() bool { return p.PoolStats().Live == 0 })
		return p.PoolStats()
	}
	v1 := h.Current()
	if s := waitReapedAll(v1); s.Created != 1 || s.Reaped != 1 {
		t.Fatalf("after load: %+v, want the smoke call's instance only, reaped", s)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("version = %q, %v", v, err)
	}
	if s := v1.PoolStats(); s.Created != 2 {
		t.Fatalf("after a call: %+v, want a second instance", s)
	}
	waitReapedAll(v1)
	if err := f.reg.Register(ctx, "lazy", guest(t, "v2", ""), policy); err != nil {
		t.Fatal(err)
	}
	v2 := h.Current()
	if v2 == v1 {
		t.Fatal("not reloaded")
	}
	if s := waitReapedAll(v2); s.Created != 1 {
		t.Fatalf("new version: %+v, want the smoke call's instance only (nothing to pre-warm)", s)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("version = %q, %v", v, err)
	}
}
