package direct_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/bench/internal/contenders"
	"github.com/wasmprov/wasmprov/bench/internal/direct"
	"github.com/wasmprov/wasmprov/bench/internal/fixture"
)

// TestLatencyDistribution prints the distribution of single guest calls,
// which separates the per-call cost from the guest's GC pauses.
func TestLatencyDistribution(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	ctx := context.Background()
	path, err := contenders.Build(contenders.WasmprovGuest)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := direct.Compile(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	m := fixture.Machine("http://127.0.0.1:1")
	for _, gogc := range []string{"50", "100", "400", "off"} {
		inst, err := mod.InstantiateEnv(ctx, "GOGC", gogc)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			meth abi.Method
			spec *clusterv1alpha1.MachineSpec
		}{
			{"empty(GetCloudConfig, empty spec)", abi.MethodGetCloudConfig, &clusterv1alpha1.MachineSpec{}},
			{"validate", abi.MethodValidate, &m.Spec},
		} {
			const n = 2000
			d := make([]time.Duration, n)
			for i := range d {
				s := time.Now()
				st, _, err := inst.CallSpec(ctx, tc.meth, tc.spec)
				d[i] = time.Since(s)
				if err != nil || st != abi.StatusOK {
					t.Fatal(err, st)
				}
			}
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			t.Logf("GOGC=%s %s: mean %v p10 %v p50 %v p90 %v p99 %v max %v; memory %d KiB", gogc, tc.name, sum/n, d[n/10], d[n/2], d[n*9/10], d[n*99/100], d[n-1], inst.MemoryBytes()>>10)
		}
		inst.Close(ctx)
	}
}
