package runtime_test

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/runtime"
)

// TestRealTimeSpinningGuestAndGC measures how long a garbage collection of the host
// waits while a guest computes without calling the host. On wasmtime the
// guest runs inside a cgo call, which a stop-the-world does not wait for;
// on wazero the instrumented guest yields to the Go scheduler every half
// millisecond or so of work. Either way the collection finishes promptly
// (TestRealTimeDeadlineSlack holds harder guests to 100 ms).
func TestRealTimeSpinningGuestAndGC(t *testing.T) {
	if testing.Short() {
		t.Skip("spins a guest for a second")
	}
	ctx := context.Background()
	rt := newRuntime(t)
	spin := time.Second
	p, err := rt.LoadBytes(ctx, "loop", readFixture(t, "loop"),
		runtime.WithPolicy(runtime.Policy{CallTimeout: runtime.Duration(spin)}))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m", "u", map[string]any{})
	done := make(chan error, 1)
	go func() { done <- cloud.SeedProvider(p, nil).Validate(m.Spec) }()
	time.Sleep(100 * time.Millisecond) // the guest is spinning by now
	start := time.Now()
	goruntime.GC()
	stall := time.Since(start)
	if err := <-done; runtime.ErrorClass(err) != runtime.ClassTimeout {
		t.Fatalf("the spinning call ended with %v, want a timeout", err)
	}
	t.Logf("%s: a GC during a %s guest spin took %s", rt.Engine(), spin, stall)
	if stall > maxGCPause {
		t.Errorf("a GC waited %s for a spinning guest", stall)
	}
}
