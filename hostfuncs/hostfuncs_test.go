package hostfuncs_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/hostfuncs"
)

func ok(context.Context, hostfuncs.Request) ([]byte, error) { return nil, nil }

func TestValidate(t *testing.T) {
	good := hostfuncs.Function{Module: "example_ipam_v1", Name: "allocate", Capability: "ipam.example.com/addresses", Handler: ok}
	if err := good.Validate(); err != nil {
		t.Fatalf("a valid function: %v", err)
	}
	for _, tc := range []struct {
		name   string
		modify func(*hostfuncs.Function)
		want   string // the field the error names
	}{
		{"empty module", func(f *hostfuncs.Function) { f.Module = "" }, "Module"},
		{"the ABI's module", func(f *hostfuncs.Function) { f.Module = "wasmprov_v1" }, "reserved"},
		{"a future ABI's module", func(f *hostfuncs.Function) { f.Module = "wasmprov_v2" }, "reserved"},
		{"the instrumentation's module", func(f *hostfuncs.Function) { f.Module = "wasmprov_interrupt" }, "reserved"},
		{"WASI", func(f *hostfuncs.Function) { f.Module = "wasi_snapshot_preview1" }, "reserved"},
		{"env", func(f *hostfuncs.Function) { f.Module = "env" }, "reserved"},
		{"upper case", func(f *hostfuncs.Function) { f.Module = "Example" }, "lower-case"},
		{"leading digit", func(f *hostfuncs.Function) { f.Module = "1example" }, "start with a letter"},
		{"long name", func(f *hostfuncs.Function) { f.Name = strings.Repeat("a", 65) }, "Name"},
		{"dotted name", func(f *hostfuncs.Function) { f.Name = "a.b" }, "Name"},
		{"built-in capability", func(f *hostfuncs.Function) { f.Capability = "http" }, "domain-qualified"},
		{"no domain", func(f *hostfuncs.Function) { f.Capability = "ipam/allocate" }, "domain-qualified"},
		{"no name", func(f *hostfuncs.Function) { f.Capability = "ipam.example.com/" }, "domain-qualified"},
		{"upper-case capability", func(f *hostfuncs.Function) { f.Capability = "IPAM.example.com/a" }, "domain-qualified"},
		{"negative limit", func(f *hostfuncs.Function) { f.MaxUsesPerCall = -1 }, "negative"},
		{"no handler", func(f *hostfuncs.Function) { f.Handler = nil }, "Handler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good
			tc.modify(&f)
			err := f.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
