package infrastructure

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// WasmMachines are counted by provider, OS and the provider's
// MachineMetricsLabels (asked once per generation), and Creates counted.
func TestMachineMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	if err := e.r.metrics.register(reg); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	e.mustReconcile()
	e.mustReconcile()
	want := `# HELP wasmprov_wasmmachines_total Number of WasmMachines by provider, OS and the provider's MachineMetricsLabels
# TYPE wasmprov_wasmmachines_total gauge
wasmprov_wasmmachines_total{os="ubuntu",provider="cloud",size="cx22"} 1
# HELP wasmprov_wasmmachine_instance_creates_total Successful provider Create calls for WasmMachines
# TYPE wasmprov_wasmmachine_instance_creates_total counter
wasmprov_wasmmachine_instance_creates_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"wasmprov_wasmmachines_total", "wasmprov_wasmmachine_instance_creates_total"); err != nil {
		t.Fatal(err)
	}
	if n := e.cloud.count("MachineMetricsLabels"); n != 1 {
		t.Fatalf("MachineMetricsLabels called %d times for one generation", n)
	}
}

// Provider calls outlive the manager's stop by ShutdownTimeout, not
// more.
func TestCallContextGrace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	r, err := NewMachineReconciler(MachineOptions{Client: newEnv(t).c, APIReader: newEnv(t).c, Providers: &providers{},
		ShutdownTimeout: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	call, done := r.callContext(ctx)
	defer done()
	stop()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // the AfterFunc runs on its own goroutine
	}
	if call.Err() != nil {
		t.Fatal("call cancelled with the manager, before the grace period")
	}
	clk.Step(time.Minute)
	<-call.Done()
}
