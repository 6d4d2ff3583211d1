package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// refused asserts that loading fixture fails as an invalid module whose
// error contains every string of want.
func refused(fixture string, want ...string) func(*testing.T, *specHost) {
	return func(t *testing.T, h *specHost) {
		err := h.loadFixture(t, fixture)
		if !errors.Is(err, runtime.ErrInvalidModule) {
			t.Errorf("want ErrInvalidModule, got %v", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("want %q in the error, got %v", w, err)
			}
		}
	}
}

// badResult asserts that method m of scenario n is an invalid result
// whose message contains want, and whether the instance was discarded.
func badResult(m abi.Method, n int, discard bool, want ...string) func(*testing.T, *specHost) {
	return func(t *testing.T, h *specHost) {
		var err error
		d := discarded(h.all, func() { _, err = h.call(h.all, m, n, nil) })
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, want...)
		if ok, _, _ := cloudprovidererrors.IsTerminalError(err); ok {
			t.Errorf("an invalid result became a terminal error: %v", err)
		}
		if (d == 1) != discard {
			t.Errorf("instances discarded: %d, want discarded=%v", d, discard)
		}
	}
}

// reports asserts the report of scenario n in method m under p.
func reports(none bool, m abi.Method, n int, want string) func(*testing.T, *specHost) {
	return func(t *testing.T, h *specHost) {
		p := h.all
		if none {
			p = h.none
		}
		if got := h.report(t, p, m, n, nil); got != want {
			t.Errorf("%s reported %q, want %q", m, got, want)
		}
	}
}

func specRows() []specRow {
	get, create := abi.MethodGet, abi.MethodCreate
	rows := []specRow{
		{"§2", "a module of another ABI version is refused, naming both versions",
			refused("abi_v2", "version 2", "version 1")},
		{"§2", "capability bits the host does not know are refused",
			refused("future_caps", "unknown capability bits")},
		{"§3", "a missing method export makes the module invalid",
			refused("missing_export", `missing export "wasmprov_delete"`)},
		{"§3", "an export with another signature makes the module invalid",
			refused("wrong_signature", `export "wasmprov_validate" has signature`)},
		{"§3", "an import from another module makes the module invalid",
			refused("foreign_import", "from unknown module")},
		{"§3", "a wasmprov_v1 name not listed makes the module invalid",
			refused("unknown_import", "imports unknown host function wasmprov_v1.")},
		{"§3", "a start section is refused",
			refused("start_section", "start section")},
		{"§3", "a WASI command (exports _start) is refused",
			refused("command", `exports "_start": it is a WASI command`, "SPEC §3")},

		{"§4", "OK is success", func(t *testing.T, h *specHost) {
			if _, err := h.call(h.all, abi.MethodValidate, scNoOutput, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"§4", "ERROR is a plain, retried error", func(t *testing.T, h *specHost) {
			_, err := h.call(h.all, abi.MethodValidate, scErrorNoSetError, nil)
			expectCallError(t, err, runtime.ClassTransient, nil, "without a message")
			if _, ok := cloudprovidererrors.RetryAfter(err); ok || cloudprovidererrors.IsNotFound(err) {
				t.Errorf("a plain ERROR became %v", err)
			}
		}},
		{"§4", "ERROR with retry_after_ms > 0 is a RetryableError", func(t *testing.T, h *specHost) {
			_, err := h.call(h.all, abi.MethodValidate, scRetry1500, nil)
			if after, ok := cloudprovidererrors.RetryAfter(err); !ok || after != 1500*time.Millisecond {
				t.Errorf("retry after %v (%v), want 1.5s: %v", after, ok, err)
			}
		}},
		{"§4", "TERMINAL is a TerminalError with set_error's reason and message", func(t *testing.T, h *specHost) {
			_, err := h.call(h.all, abi.MethodValidate, scTerminalValid, nil)
			if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); !ok || reason != clusterv1alpha1.InvalidConfigurationMachineError || msg != "bad" {
				t.Errorf("want TerminalError{InvalidConfiguration, bad}, got %v", err)
			}
		}},
		{"§4", "NOT_FOUND is ErrInstanceNotFound", func(t *testing.T, h *specHost) {
			if _, err := h.call(h.all, get, scNotFound, nil); !cloudprovidererrors.IsNotFound(err) {
				t.Errorf("want ErrInstanceNotFound, got %v", err)
			}
		}},
		{"§4", "PANIC is an error and the host discards the instance", func(t *testing.T, h *specHost) {
			var err error
			d := discarded(h.all, func() { _, err = h.call(h.all, get, scPanic, nil) })
			expectCallError(t, err, runtime.ClassTrap, runtime.ErrGuestPanic, "boom")
			if d != 1 {
				t.Errorf("%d instances discarded, want 1", d)
			}
		}},
		{"§4", "IN_PROGRESS (5) from a method other than Delete is an invalid result and the instance is discarded",
			badResult(abi.MethodValidate, scStatus5, true, "IN_PROGRESS (5), which only Delete may return")},
		{"§4", "IN_PROGRESS from Delete of a module not declaring async_delete is an invalid result and the instance is discarded",
			badResult(abi.MethodDelete, scStatus5, true, "does not declare the async_delete capability")},
		{"§4.3", "a SetMetricsForMachines result replaces the samples whole; a refused one leaves none", func(t *testing.T, _ *specHost) {
			out := `{"metrics":[{"name":"a","type":"gauge","value":1},{"name":"b","type":"gauge","value":2}]}`
			var input []byte
			p := metricsProvider(t, &out, &input)
			calls := p
			if err := calls.SetMetricsForMachines(context.Background(), machineList("m"), nil); err != nil || len(p.MetricSamples()) != 2 {
				t.Fatalf("first result: %v, %d samples", err, len(p.MetricSamples()))
			}
			out = `{"metrics":[{"name":"c","type":"counter","value":3}]}`
			if err := calls.SetMetricsForMachines(context.Background(), machineList("m"), nil); err != nil {
				t.Fatal(err)
			}
			if s := p.MetricSamples(); len(s) != 1 || s[0].Name != "c" {
				t.Errorf("second result did not replace the first: %v", s)
			}
			out = `{"metrics":[{"name":"c","type":"counter","value":-3}]}`
			if err := calls.SetMetricsForMachines(context.Background(), machineList("m"), nil); err == nil || p.MetricSamples() != nil {
				t.Errorf("refused result: err=%v samples=%v, want an error and none", err, p.MetricSamples())
			}
		}},
		{"§4", "a negative status is an invalid result and the instance is discarded",
			badResult(abi.MethodValidate, scStatusMinus1, true, "unknown status -1")},
		{"§4", "TERMINAL with a reason not in machine-controller's list is an invalid result, the instance discarded",
			badResult(abi.MethodValidate, scTerminalBogus, true, `with reason "Bogus", which is not one of machine-controller's MachineStatusError values`, "InvalidConfiguration, UnsupportedChange", "SPEC §4")},
		{"§4", "the TERMINAL reason matches exactly, case included",
			badResult(abi.MethodValidate, scTerminalLowercase, true, `reason "invalidconfiguration"`)},
		{"§4", "TERMINAL with no reason (no set_error) is an invalid result, the instance discarded",
			badResult(abi.MethodValidate, scTerminalNoSetError, true, "Validate returned TERMINAL (2) without calling `set_error`", "SPEC §4")},
		{"§4", "a trap fails the call with a trap error and discards the instance", func(t *testing.T, h *specHost) {
			var err error
			d := discarded(h.all, func() { _, err = h.call(h.all, abi.MethodValidate, scTrap, nil) })
			expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap)
			if d != 1 {
				t.Errorf("%d instances discarded, want 1", d)
			}
		}},
		{"§4", "proc_exit fails the call with a trap error and discards the instance", func(t *testing.T, h *specHost) {
			var err error
			d := discarded(h.all, func() { _, err = h.call(h.all, abi.MethodValidate, scProcExit, nil) })
			expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap, "exited with code 3")
			if d != 1 {
				t.Errorf("%d instances discarded, want 1", d)
			}
		}},

		{"§4.1", "AddDefaults: no output means unchanged", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, abi.MethodAddDefaults, scNoOutput, nil)
			spec, _ := out.(clusterv1alpha1.MachineSpec)
			if err != nil || spec.Name != "spec-probe" || string(spec.ProviderSpec.Value.Raw) != "0" {
				t.Errorf("want the spec unchanged, got %+v, %v", spec, err)
			}
		}},
		{"§4.1", "AddDefaults: the output replaces the whole spec", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, abi.MethodAddDefaults, scDefaultsPartial, nil)
			spec, _ := out.(clusterv1alpha1.MachineSpec)
			if err != nil || spec.Name != "" || string(spec.ProviderSpec.Value.Raw) != `{"defaulted":true}` {
				t.Errorf("want exactly the output (name cleared), got %+v, %v", spec, err)
			}
		}},
		{"§4.1", "AddDefaults: an output that is not a MachineSpec is an invalid result",
			badResult(abi.MethodAddDefaults, scNotJSON, false, "AddDefaults returned status OK with an output that is not a MachineSpec", "got `oops`")},
		{"§4.1", "Get: status OK without output is an invalid result",
			badResult(get, scNoOutput, false, "Get returned status OK without calling `output`: an Instance document is required (SPEC §4.1)")},
		{"§4.1", "Get: status OK with an empty output is an invalid result",
			badResult(get, scEmptyOutput, false, "Get returned status OK but called `output` with nothing: an Instance document is required (SPEC §4.1)")},
		{"§4.1", "Create: status OK without output is an invalid result",
			badResult(create, scNoOutput, false, "Create returned status OK without calling `output`")},
		{"§4.1", "Get: status OK after the host refused the output is an invalid result",
			badResult(get, scOutputTooLarge, false, "Get returned status OK, but the host refused its `output` with TOO_LARGE (-6)")},
		{"§4.1", "AddDefaults, GetCloudConfig, MachineMetricsLabels: a refused output is not \"no output\"", func(t *testing.T, h *specHost) {
			for _, m := range []abi.Method{abi.MethodAddDefaults, abi.MethodGetCloudConfig, abi.MethodMachineMetricsLabels} {
				_, err := h.call(h.all, m, scOutputTooLarge, nil)
				expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, m.String()+" returned status OK, but the host refused its `output` with TOO_LARGE")
			}
		}},
		{"§4.1", "Get: an output that is not JSON is an invalid result naming what was expected",
			badResult(get, scNotJSON, false, "Get returned status OK with an output that is not an Instance document", "got `oops`", "SPEC §8.1")},
		{"§4.1", "GetCloudConfig: no output means an empty config and name", func(t *testing.T, h *specHost) {
			if out, err := h.call(h.all, abi.MethodGetCloudConfig, scNoOutput, nil); err != nil || out != [2]string{} {
				t.Errorf("want empty config and name, got %q, %v", out, err)
			}
		}},
		{"§4.1", "GetCloudConfig: the output is {config, name}", func(t *testing.T, h *specHost) {
			if out, err := h.call(h.all, abi.MethodGetCloudConfig, scCloudConfig, nil); err != nil || out != [2]string{"[global]", "spec"} {
				t.Errorf("got %q, %v", out, err)
			}
		}},
		{"§4.1", "GetCloudConfig: an output that is not JSON is an invalid result",
			badResult(abi.MethodGetCloudConfig, scNotJSON, false, `GetCloudConfig returned status OK with an output that is not a JSON object {"config": string, "name": string}`)},
		{"§4.1", "MachineMetricsLabels: no output means no labels", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, abi.MethodMachineMetricsLabels, scNoOutput, nil)
			if labels, _ := out.(map[string]string); err != nil || len(labels) != 0 {
				t.Errorf("want no labels, got %v, %v", out, err)
			}
		}},
		{"§4.1", "MachineMetricsLabels: the output is an object of string to string", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, abi.MethodMachineMetricsLabels, scLabels, nil)
			if labels, _ := out.(map[string]string); err != nil || labels["size"] != "cx22" || len(labels) != 1 {
				t.Errorf("got %v, %v", out, err)
			}
		}},
		{"§4.1", "MachineMetricsLabels: an output that is not JSON is an invalid result",
			badResult(abi.MethodMachineMetricsLabels, scNotJSON, false, "MachineMetricsLabels returned status OK with an output that is not a JSON object of string to string")},
	}
	return append(rows, specRowsHostFunctions()...)
}

func specRowsHostFunctions() []specRow {
	get, create := abi.MethodGet, abi.MethodCreate
	rows := []specRow{
		{"§5.1", "a result longer than limit is the pending result: take_result(0, 0) asks its length, take_result copies and clears it",
			reports(false, get, scPending, "2 2 2 -3 19")},
		{"§5.1", "an errno's explanation is kept as the pending result",
			reports(false, get, scErrnoExplained, "-3 unknown input part 0")},
		{"§5.1", "a refused take_result keeps the pending result",
			reports(false, get, scTakeRefusedKeeps, "2 -3 2")},
		{"§5.1", "a result that fits the buffer leaves nothing pending",
			reports(false, get, scFitClears, "2 1 -3")},
		{"§5.1", "output and set_error leave the pending result alone",
			reports(false, get, scPendingSurvivesOutput, "2 2")},
		{"§5.2", "a range outside linear memory (limit -1 and 0x7fffffff included) is INVALID, never a trap", func(t *testing.T, h *specHost) {
			var got string
			d := discarded(h.all, func() { got = h.report(t, h.all, get, scRanges, nil) })
			if want := "-3 -3 -3 -3 -3 -3 -3"; got != want {
				t.Errorf("reported %q, want %q", got, want)
			}
			if d != 0 {
				t.Errorf("%d instances discarded: a bad range is an errno, not a trap", d)
			}
		}},
		{"§5.3", "NOT_DECLARED keeps an explanation too", func(t *testing.T, h *specHost) {
			got := h.report(t, h.none, get, scNotDeclared, nil)
			if !strings.HasPrefix(got, "-1 -1 ") || !strings.Contains(got, "http_do needs capability [http]") {
				t.Errorf("reported %q, want NOT_DECLARED from http_do and log, then http_do's explanation", got)
			}
		}},
		{"§6.1", "input: a part not in the table is INVALID, a part the method does not offer UNAVAILABLE, log_level offered everywhere", func(t *testing.T, h *specHost) {
			// parts 0..7: none, machine, spec, provider_spec, userdata,
			// new_uid, log_level, machine_list (SetMetricsForMachines only)
			want := map[abi.Method]string{
				abi.MethodAddDefaults:          "-3 -5 0 0 -5 -5 0 -5",
				abi.MethodValidate:             "-3 -5 0 0 -5 -5 0 -5",
				abi.MethodGet:                  "-3 0 0 0 -5 -5 0 -5",
				abi.MethodGetCloudConfig:       "-3 -5 0 0 -5 -5 0 -5",
				abi.MethodCreate:               "-3 0 0 0 0 -5 0 -5",
				abi.MethodDelete:               "-3 0 0 0 -5 -5 0 -5",
				abi.MethodMachineMetricsLabels: "-3 0 0 0 -5 -5 0 -5",
				abi.MethodMigrateUID:           "-3 0 0 0 -5 0 0 -5",
			}
			for _, m := range abi.Methods {
				if got := h.report(t, h.all, m, scInputParts, nil); got != want[m] {
					t.Errorf("%s: parts 0..7 gave %q, want %q", m, got, want[m])
				}
			}
		}},
		{"§6.1", "input: log_level is the logger's lowest level as decimal text",
			reports(false, abi.MethodValidate, scLogLevel, "4")},
		{"§6.1", "output again replaces the document", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, get, scOutputTwice, nil)
			if inst, _ := out.(instance.Instance); err != nil || inst.ID() != "42" {
				t.Errorf("want the second document (id 42), got %v, %v", out, err)
			}
		}},
		{"§6.1", "set_error: a retry hint above one hour is clamped to one hour", func(t *testing.T, h *specHost) {
			_, err := h.call(h.all, abi.MethodValidate, scRetryDay, nil)
			if after, _ := cloudprovidererrors.RetryAfter(err); after != time.Hour {
				t.Errorf("retry after %v, want 1h: %v", after, err)
			}
		}},
		{"§6.1", "a providerSpec.value that is not JSON is a TERMINAL InvalidConfiguration before the guest runs", func(t *testing.T, h *specHost) {
			m := probeMachine(0)
			m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte("{")}
			_, err := cloud.SeedProvider(h.all, nil).Get(m)
			if ok, reason, _ := cloudprovidererrors.IsTerminalError(err); !ok || reason != clusterv1alpha1.InvalidConfigurationMachineError {
				t.Errorf("want TERMINAL InvalidConfiguration, got %v", err)
			}
		}},
		{"§6.2", "log of a module not granted log is NOT_DECLARED",
			func(t *testing.T, h *specHost) {
				if got := h.report(t, h.none, get, scNotDeclared, nil); !strings.HasPrefix(got, "-1 -1 ") {
					t.Errorf("reported %q, want log's NOT_DECLARED second", got)
				}
			}},
		{"§6.3", "machine_update and pv_list outside Create and Delete are UNAVAILABLE",
			reports(false, get, scUnavailable, "-5 -5")},
		{"§6.3", "machine_update without an updater is UNAVAILABLE",
			reports(false, create, scUnavailable, "-5 -5")},
		{"§6.3", "machine_update: an unknown field is INVALID, a host annotation DENIED, an identity patch INVALID; an allowed change is persisted", func(t *testing.T, h *specHost) {
			store := newMachineStore(probeMachine(scMachineUpdate))
			got := h.report(t, h.all, create, scMachineUpdate, &provider.Data{Update: store.updater()})
			if want := "-3 -2 -3 0"; got != want {
				t.Errorf("reported %q, want %q", got, want)
			}
			if m := store.get("spec-probe"); m.Labels["spec"] != "probe" || m.Annotations["wasmprov.io/x"] != "" || m.Name != "spec-probe" {
				t.Errorf("stored Machine: labels %v, annotations %v, name %q", m.Labels, m.Annotations, m.Name)
			}
		}},
		{"§6.3", "http_do: a host not allowed, or plain http, is DENIED",
			reports(false, abi.MethodValidate, scHTTPDenied, "-2 -2")},
		{"§6.3", "config_var: a Secret the spec does not reference is DENIED; an environment variable the policy does not list is unset",
			reports(false, abi.MethodValidate, scConfigVar, "-2 0")},
		{"§6.4", "every host function called outside a call is UNAVAILABLE",
			reports(false, abi.MethodValidate, scOutsideCall, "-5")},
		{"§6.4", "ranges are checked before the capability",
			reports(true, get, scRanges, "-3 -3 -3 -3 -3 -3 -3")},
		{"§6.5", "a custom host function's import loads only when the policy grants its capability by name; another signature or an unknown name is INVALID",
			func(t *testing.T, _ *specHost) {
				data := []byte{valI32, valI32, valI32, valI32}
				f := hostfuncs.Function{Module: "example_v1", Name: "f", Capability: "example.com/f",
					Handler: func(context.Context, hostfuncs.Request) ([]byte, error) { return nil, nil }}
				rt := newRuntime(t, runtime.WithHostFunctions(f))
				load := func(im genImport, policy runtime.Policy) error {
					_, err := rt.LoadBytes(context.Background(), "custom", providerModule(1, nil, im).bytes(), runtime.WithPolicy(policy))
					return err
				}
				good := genImport{"example_v1", "f", data, []byte{valI64}}
				if err := load(good, runtime.Policy{Capabilities: []string{"example.com/f"}}); err != nil {
					t.Errorf("granted: %v", err)
				}
				for name, tc := range map[string]struct {
					im     genImport
					policy runtime.Policy
					want   string
				}{
					"not granted":     {good, runtime.Policy{}, `needs capability "example.com/f"`},
					"other signature": {genImport{"example_v1", "f", data, []byte{valI32}}, runtime.Policy{Capabilities: []string{"example.com/f"}}, "has signature"},
					"unknown name":    {genImport{"example_v1", "g", data, []byte{valI64}}, runtime.Policy{Capabilities: []string{"example.com/f"}}, "unknown host function example_v1.g"},
				} {
					if err := load(tc.im, tc.policy); !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("%s: %v, want ErrInvalidModule with %q", name, err, tc.want)
					}
				}
			}},
		{"§7", "a host function of a capability not granted is NOT_DECLARED",
			func(t *testing.T, h *specHost) {
				if got := h.report(t, h.none, abi.MethodValidate, scNotDeclared, nil); !strings.HasPrefix(got, "-1 ") {
					t.Errorf("reported %q, want http_do's NOT_DECLARED first", got)
				}
				// random grants nothing a policy could withhold (§7).
				if h.none.Granted() != abi.CapRandom || h.all.Granted() != 0x7f {
					t.Errorf("granted: %v and %v, want random only and every declared one", h.none.Granted(), h.all.Granted())
				}
			}},
		{"§8.1", "an Instance is decoded with its addresses", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, get, scInstance, nil)
			inst, _ := out.(instance.Instance)
			if err != nil || inst.ID() != "42" || inst.Name() != "w" || inst.ProviderID() != "spec://42" ||
				inst.Status() != instance.StatusRunning || inst.Addresses()["10.0.0.1"] != "InternalIP" {
				t.Errorf("got %v, %v", out, err)
			}
		}},
		{"§8.1", "an unknown instance status is an invalid result",
			badResult(get, scUnknownStatus, false, `Get returned an Instance with unknown status "booting"`, "SPEC §8.1")},
		{"§8.1", "an Instance without status is an invalid result",
			badResult(get, scNoStatus, false, `Get returned an Instance without "status"`, "SPEC §8.1")},
		{"§8.1", "a running Instance with an empty id is an invalid result",
			badResult(create, scRunningNoID, false, `Create returned an Instance with status "running" and an empty "id"`, "SPEC §8.1")},
		{"§8.1", "an Instance that is not running may have no id yet", func(t *testing.T, h *specHost) {
			out, err := h.call(h.all, create, scCreatingNoID, nil)
			if inst, _ := out.(instance.Instance); err != nil || inst.Status() != instance.StatusCreating || inst.ID() != "" {
				t.Errorf("got %v, %v", out, err)
			}
		}},
	}
	return rows
}
