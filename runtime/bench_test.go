package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/examples/fake/fakeprovider"
	"github.com/wasmprov/wasmprov/guests/go/provider"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	wprovider "github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/native"

	"sigs.k8s.io/yaml"
)

// Benchmarks of the core call path. Reproduce (docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench 'EmptyCall|Validate' -benchmem -count 6 ./runtime/
//
// Every wasm figure sits beside the same provider code run natively in the
// same process, so the ratio is measured in one run.

// realisticMachine is the Hetzner Machine from the API types' test data,
// with the fake provider's passValidation added to its cloudProviderSpec: a
// provider spec of realistic size and shape (~1.5 KB of JSON).
func realisticMachine(b testing.TB) *clusterv1alpha1.Machine {
	raw, err := os.ReadFile(filepath.Join("..", "apis", "cluster", "v1alpha1", "testdata", "hetzner-machine.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	raw = []byte(strings.Replace(string(raw), `serverType: "cx22"`, "serverType: \"cx22\"\n        passValidation: true", 1))
	m := new(clusterv1alpha1.Machine)
	if err := yaml.UnmarshalStrict(raw, m); err != nil {
		b.Fatal(err)
	}
	m.UID = "a3c5e8f0-1b2d-4c6e-8f0a-123456789abc"
	return m
}

// BenchmarkEmptyCall is the cost of the ABI path itself: a method whose
// guest reads no input and returns OK at once (the minimal.wat fixture's
// Validate), through cloud.Provider, the pool, the call state and the
// status mapping.
func BenchmarkEmptyCall(b *testing.B) {
	ctx := context.Background()
	rt := newRuntime(b)
	spec := newMachine("m", "u", map[string]any{}).Spec
	for _, interruptible := range []bool{true, false} {
		name := "interruptible"
		if !interruptible {
			name = "uninterruptible"
		}
		b.Run("wasm/"+name, func(b *testing.B) {
			rt := newRuntime(b, runtime.WithInterruptibleGuests(interruptible))
			p, err := rt.LoadBytes(ctx, "minimal", readFixture(b, "minimal"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Validate(ctx, spec, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("native", func(b *testing.B) {
		p, err := native.Load(rt, "noop", noopProvider{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Validate(ctx, spec, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// noopProvider is the native twin of minimal.wat... almost: the SDK decodes
// the spec before calling Validate, so it is the native SDK path.
type noopProvider struct{ fakeprovider.Provider }

func (noopProvider) Validate(context.Context, provider.MachineSpec) error { return nil }

// BenchmarkValidate runs the fake provider's Validate on a realistic
// Machine: the guest decodes the spec and providerconfig.Config and the
// cloudProviderSpec, as every machine-controller provider does.
func BenchmarkValidate(b *testing.B) {
	ctx := context.Background()
	m := realisticMachine(b)
	rt := newRuntime(b)
	wasm, err := rt.Load(ctx, testguest.Build(b, "examples/fake"))
	if err != nil {
		b.Fatal(err)
	}
	rtU := newRuntime(b, runtime.WithInterruptibleGuests(false))
	wasmU, err := rtU.Load(ctx, testguest.Build(b, "examples/fake"))
	if err != nil {
		b.Fatal(err)
	}
	inProcess, err := native.Load(rt, "fake", fakeprovider.Provider{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		p    wprovider.Interface
	}{{"wasm", wasm}, {"wasm-uninterruptible", wasmU}, {"native", inProcess}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.p.Validate(ctx, m.Spec, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The provider code alone, called directly on a spec decoded once: the
	// floor for any host, wasm or not.
	b.Run("native-direct", func(b *testing.B) {
		spec := provider.MachineSpec{}
		spec.ProviderSpec.Value = m.Spec.ProviderSpec.Value.Raw
		b.ReportAllocs()
		for b.Loop() {
			if err := (fakeprovider.Provider{}).Validate(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
