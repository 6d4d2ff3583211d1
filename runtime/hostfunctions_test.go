package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/hostfuncs"
)

func TestWithHostFunctionsRefusesBadFunctions(t *testing.T) {
	ok := func(context.Context, hostfuncs.Request) ([]byte, error) { return nil, nil }
	f := hostfuncs.Function{Module: "example_v1", Name: "f", Capability: "example.com/f", Handler: ok}
	bad := f
	bad.Module = "wasmprov_v1"
	for name, tc := range map[string]struct {
		fns  []hostfuncs.Function
		want string
	}{
		"twice":   {[]hostfuncs.Function{f, f}, "example_v1.f is given twice"},
		"invalid": {[]hostfuncs.Function{bad}, "reserved"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(WithHostFunctions(tc.fns...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Repeated options add up.
	g := f
	g.Name = "g"
	r, err := New(WithHostFunctions(f), WithHostFunctions(g))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if len(r.host.custom) != 2 || !r.host.defines("example.com/f") {
		t.Fatalf("custom functions %v", r.host.custom)
	}
	if err := r.host.checkCapabilityNames(Policy{Capabilities: []string{"http", "example.com/f"}}); err != nil {
		t.Fatal(err)
	}
	err = r.host.checkCapabilityNames(Policy{Capabilities: []string{"example.com/typo"}})
	if err == nil || !strings.Contains(err.Error(), "custom: example.com/f") {
		t.Fatalf("a policy naming an unknown custom capability: %v", err)
	}
}
