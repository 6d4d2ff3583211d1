package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// pacedPolicy allows one request per 1000 s: after the first, the
// bucket is empty for the rest of any test.
func pacedPolicy(c *fakeCloud) runtime.Policy {
	return runtime.Policy{AllowedHosts: []string{c.host()}, AllowInsecureHTTP: true,
		HTTPRequestsPerSecond: 0.001, HTTPBurst: 1}
}

// The pace is the provider name's, not the version's: a second version
// loaded under the same name finds the bucket the first emptied, and a
// call that could not send its request before its deadline fails at once
// — transient, nothing sent — and is counted.
func TestPacingOutlivesAVersion(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud(t, "s3cret")
	rt := newRuntime(t)
	wasm := testguest.Build(t, "examples/hostcalls")
	m := newMachine("worker-1", "u-1", hostcallsSpec(c.srv.URL, "s3cret"))
	v1, err := rt.Load(ctx, wasm, runtime.WithName("paced"), runtime.WithPolicy(pacedPolicy(c)))
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Validate(ctx, m.Spec, nil); err != nil {
		t.Fatal(err)
	}
	if err := v1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	v2, err := rt.Load(ctx, wasm, runtime.WithName("paced"), runtime.WithPolicy(pacedPolicy(c)))
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close(ctx)
	callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = v2.Validate(callCtx, m.Spec, nil)
	if err == nil || runtime.ErrorClass(err) != runtime.ClassTransient {
		t.Fatalf("second version's request: %v (%s), want a transient error", err, runtime.ErrorClass(err))
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		t.Fatal("the call waited into its deadline")
	}
	c.mu.Lock()
	sent := len(c.requests)
	c.mu.Unlock()
	if sent != 1 {
		t.Fatalf("%d requests reached the cloud, want the first version's only", sent)
	}
	if p := v2.HTTPPacing(); p.DeadlineExceeded != 1 || p.RequestsPerSecond != 0.001 || p.Burst != 1 {
		t.Fatalf("pacing %+v", p)
	}
}

// An unpaced policy (the default) leaves the requests alone: no limiter.
func TestUnpacedByDefault(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud(t, "s3cret")
	rt := newRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "examples/hostcalls"),
		runtime.WithPolicy(runtime.Policy{AllowedHosts: []string{c.host()}, AllowInsecureHTTP: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	m := newMachine("worker-1", "u-1", hostcallsSpec(c.srv.URL, "s3cret"))
	for range 3 {
		if err := p.Validate(ctx, m.Spec, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.HTTPPacing(); got != (runtime.HTTPPacing{}) {
		t.Fatalf("pacing %+v for an unpaced policy", got)
	}
}

// A throttled call whose deadline passes returns within 100 ms of it
// (here: at once, since the bucket's next token is 1000 s away).
func TestRealTimeThrottledCallReturnsByItsDeadline(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud(t, "s3cret")
	rt := newRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "examples/hostcalls"), runtime.WithPolicy(pacedPolicy(c)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	m := newMachine("worker-1", "u-1", hostcallsSpec(c.srv.URL, "s3cret"))
	if err := p.Validate(ctx, m.Spec, nil); err != nil {
		t.Fatal(err)
	}
	const deadline = 500 * time.Millisecond
	callCtx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	err = p.Validate(callCtx, m.Spec, nil)
	took := time.Since(start)
	t.Logf("throttled call returned after %v (deadline %v): %v", took, deadline, err)
	if err == nil || took > deadline+100*time.Millisecond {
		t.Fatalf("returned after %v with %v; want an error within %v", took, err, deadline+100*time.Millisecond)
	}
}
