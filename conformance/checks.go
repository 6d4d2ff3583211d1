package conformance

import (
	"encoding/json"
	"reflect"
	"strings"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cassette"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// The checks of specs: AddDefaults and Validate.

func jsonEqual(a, b any) (bool, string) {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	if reflect.DeepEqual(va, vb) {
		return true, ""
	}
	pa, _ := json.MarshalIndent(va, "", "  ")
	pb, _ := json.MarshalIndent(vb, "", "  ")
	return false, cassette.Diff(strings.Split(string(pa), "\n"), strings.Split(string(pb), "\n"))
}

func checkAddDefaultsIdempotent(t *T) error {
	spec := t.rawMachine(0).Spec
	ctx, cancel := t.call()
	defer cancel()
	d1, err := t.env.p.AddDefaults(ctx, spec, nil)
	if err != nil {
		return failf("AddDefaults of the valid spec failed: %s", describe(err))
	}
	d2, err := t.env.p.AddDefaults(ctx, d1, nil)
	if err != nil {
		return failf("AddDefaults of its own output failed: %s", describe(err))
	}
	if ok, diff := jsonEqual(d1, d2); !ok {
		return failf("AddDefaults changed its own output (- first result, + second):\n%s", diff)
	}
	return nil
}

func checkValidateValid(t *T) error {
	spec := t.rawMachine(0).Spec
	ctx, cancel := t.call()
	defer cancel()
	if d, err := t.env.p.AddDefaults(ctx, spec, nil); err == nil {
		spec = d
	}
	if err := t.env.p.Validate(ctx, spec, nil); err != nil {
		return failf("Validate rejected the configured provider spec %s: %s (if the spec is wrong, fix the conformance configuration)",
			t.env.spec, describe(err))
	}
	return nil
}

func wantInvalidConfiguration(err error, what string) error {
	if err == nil {
		return failf("Validate accepted %s", what)
	}
	if sandboxFailure(err) {
		return failf("Validate of %s failed in the sandbox: %s", what, describe(err))
	}
	if ok, reason, _ := cloudprovidererrors.IsTerminalError(err); ok {
		if reason != clusterv1alpha1.InvalidConfigurationMachineError {
			return failf("Validate of %s returned a terminal error with reason %q, want %q", what, reason, clusterv1alpha1.InvalidConfigurationMachineError)
		}
		return nil
	}
	return failf("Validate of %s returned a %s; want a terminal error with reason InvalidConfiguration "+
		"(status 2 after set_error(\"InvalidConfiguration\", ...); in the Go SDK, provider.Terminal(provider.InvalidConfiguration, ...))",
		what, describe(err))
}

func checkValidateEmpty(t *T) error {
	ctx, cancel := t.call()
	defer cancel()
	spec := t.machine(0).Spec
	spec.ProviderSpec = clusterv1alpha1.ProviderSpec{}
	return wantInvalidConfiguration(t.env.p.Validate(ctx, spec, nil), "a spec without providerSpec")
}

// garbageSpecs are provider spec values no provider can accept.
var garbageSpecs = []string{
	`"garbage"`,
	`[1,2,3]`,
	`42`,
	`{"cloudProviderSpec":"garbage"}`,
	`{"cloudProviderSpec":[true,false],"operatingSystem":7}`,
}

func checkValidateGarbage(t *T) error {
	var errs []string
	for _, g := range garbageSpecs {
		ctx, cancel := t.call()
		spec := t.machine(0).Spec
		spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(g)}
		if err := wantInvalidConfiguration(t.env.p.Validate(ctx, spec, nil), "providerSpec.value "+g); err != nil {
			errs = append(errs, err.Error())
		}
		cancel()
	}
	if len(errs) > 0 {
		return failf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
