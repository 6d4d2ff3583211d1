//go:build !wasip1

package e2e

import (
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
)

// What Validate refuses, each as a terminal InvalidConfiguration error
// that names the problem; every check of upstream's Validate, and the
// strict decoding of its GetConfig.
func TestValidateRefuses(t *testing.T) {
	f := newFixture(t, dosim.Options{})
	for _, tc := range []struct {
		name  string
		cps   map[string]any // cloudProviderSpec overrides
		value map[string]any // providerSpec.value overrides
		want  string
	}{
		{"endpoint", map[string]any{"endpoint": "http://127.0.0.1:1"}, nil, `unknown field "endpoint"`},
		{"camel case", map[string]any{"privateNetworking": true}, nil, `unknown field "privateNetworking"`},
		{"no token", map[string]any{"token": nil}, nil, "token is missing"},
		{"no region", map[string]any{"region": nil}, nil, "region is missing"},
		{"no size", map[string]any{"size": ""}, nil, "size is missing"},
		{"unknown region", map[string]any{"region": "xyz1"}, nil, `region "xyz1" not found`},
		{"unknown size", map[string]any{"size": "s-64vcpu-1tb"}, nil, `size "s-64vcpu-1tb" not found`},
		{"retired size", map[string]any{"size": "2gb"}, nil, `size "2gb" is not available`},
		{"size elsewhere", map[string]any{"size": "gpu-h100x1-80gb"}, nil, `size "gpu-h100x1-80gb" is not available in region "fra1"`},
		{"region closed", map[string]any{"region": "sfo2"}, nil, `is not available in region "sfo2"`},
		{"bad tag", map[string]any{"tags": []any{"machine controller"}}, nil, `tag "machine controller"`},
		{"bool type", map[string]any{"ipv6": "maybe"}, nil, `"ipv6"`},
		{"missing secret", map[string]any{"token": map[string]any{"secretKeyRef": map[string]any{"namespace": namespace, "name": "nope", "key": "token"}}}, nil, `"token"`},
		{"os", nil, map[string]any{"operatingSystem": "flatcar"}, `invalid operating system specified "flatcar"`},
		{"no os spec", nil, map[string]any{"operatingSystemSpec": nil}, "operatingSystemSpec in the MachineDeployment cannot be empty"},
		{"ipv6 only", nil, map[string]any{"network": map[string]any{"ipFamily": "IPv6"}}, "IPv6-only"},
		{"ip family", nil, map[string]any{"network": map[string]any{"ipFamily": "IPv5"}}, `unknown IP family "IPv5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := f.machineWith("refused", providerSpec(cloudProviderSpec(tc.cps), tc.value))
			err := f.p.Validate(f.ctx, m.Spec, nil)
			if tc.name == "missing secret" {
				// The host reports a missing Secret as a failed read:
				// transient, as for Hetzner (see README.md).
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate = %v, want an error naming %s", err, tc.want)
				}
				return
			}
			expectInvalidConfiguration(t, err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want it to say %s", err, tc.want)
			}
		})
	}
	// Dual stack is fine (the droplet gets IPv6), and rockylinux has an image.
	for _, v := range []map[string]any{{"network": map[string]any{"ipFamily": "IPv4+IPv6"}}, {"operatingSystem": "rockylinux"}} {
		if err := f.p.Validate(f.ctx, f.machineWith("ok", providerSpec(cloudProviderSpec(nil), v)).Spec, nil); err != nil {
			t.Errorf("Validate with %v: %v", v, err)
		}
	}
}
