package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Check is one conformance check.
type Check struct {
	// ID is stable; select checks by ID or prefix.
	ID string
	// Title is the one-line statement the check verifies.
	Title string
	// Doc says how it is checked.
	Doc string
	// Why says what goes wrong in machine-controller when it fails.
	Why string
	// Stateful checks need ProfileStateful.
	Stateful bool

	last bool
	run  func(*T) error
}

// Checks is the suite, in report order.
var Checks = []Check{
	{
		ID:    "abi.module",
		Title: "exports and ABI version are valid",
		Doc: "The host loads the module: every export of ABI v1 with the right signature, memory exported, " +
			"only wasmprov_v1 and WASI imports with the right signatures, wasmprov_abi_version returns 1, " +
			"no unknown capability bits, _initialize and a first instance succeed.",
		Why: "A module the host refuses cannot be loaded by machine-controller at all.",
		run: checkModule,
	},
	{
		ID:    "abi.capabilities",
		Title: "declared capabilities match what the provider calls",
		Doc: "Across the whole run, no host function was refused because its capability was not declared; " +
			"and no capability that reaches outside the sandbox (http, machine_update, pv_list, config_var) is " +
			"declared whose host function the module does not even import. " +
			"Runs after every other check, so it sees all their calls.",
		Why: "An undeclared call fails in production with NOT_DECLARED; an unused declaration asks the " +
			"operator's policy for more than the provider needs.",
		last: true,
		run:  checkCapabilities,
	},
	{
		ID:    "add-defaults.idempotent",
		Title: "AddDefaults is idempotent",
		Doc:   "AddDefaults(AddDefaults(spec)) equals AddDefaults(spec), compared as JSON values.",
		Why: "machine-controller's webhook defaults a Machine on every update; a non-idempotent default " +
			"changes the spec each time and the MachineDeployment never settles.",
		run: checkAddDefaultsIdempotent,
	},
	{
		ID:    "validate.accepts-valid",
		Title: "Validate accepts the configured valid spec",
		Doc:   "Validate(AddDefaults(spec)) succeeds for Config.ProviderSpec.",
		Why:   "A provider that rejects a valid Machine never creates anything.",
		run:   checkValidateValid,
	},
	{
		ID:    "validate.rejects-empty",
		Title: "Validate rejects an empty spec with a terminal InvalidConfiguration error",
		Doc:   "Validate of a MachineSpec without providerSpec returns status TERMINAL with reason InvalidConfiguration.",
		Why: "Configuration errors need a person: a terminal error is written into the Machine's status; " +
			"any other error makes the controller retry a Machine that can never work.",
		run: checkValidateEmpty,
	},
	{
		ID:    "validate.rejects-garbage",
		Title: "Validate rejects garbage specs with a terminal InvalidConfiguration error",
		Doc: "Validate of providerSpec.value set to JSON of the wrong shape (a string, an array, a number, a " +
			"cloudProviderSpec that is a string or an array, an operatingSystem that is a number) returns " +
			"TERMINAL with reason InvalidConfiguration, and never traps.",
		Why: "As for an empty spec; and a provider that crashes on malformed input is one kubectl apply away from an outage.",
		run: checkValidateGarbage,
	},
	{
		ID:       "get.unknown-not-found",
		Title:    "Get for an unknown Machine returns instance-not-found",
		Doc:      "Get of a Machine that was never created returns status NOT_FOUND (ErrInstanceNotFound).",
		Why:      "machine-controller creates an instance only when Get says not-found; any other answer means it never creates one, or retries forever.",
		Stateful: true,
		run:      checkGetUnknown,
	},
	{
		ID:    "create.get-same-id",
		Title: "Create then Get return the same instance ID",
		Doc:   "Create returns an instance with a non-empty ID; Get of the same Machine returns that ID.",
		Why:   "The controller tracks the instance through Get; an ID that changes makes it lose the instance (and leak it).",
		run:   checkCreateGet,
	},
	{
		ID:    "create.idempotent",
		Title: "a second Create for the same Machine does not make a second instance",
		Doc: "Create twice with the same Machine: the second returns the first instance's ID, or an error " +
			"(not a trap); Get still returns the first ID; (stateful) after Delete, Get finds nothing.",
		Why: "The controller may call Create again when an update of the Machine failed after Create succeeded; " +
			"a second instance is paid for and never deleted.",
		run: checkCreateIdempotent,
	},
	{
		ID:    "delete.missing-ok",
		Title: "Delete of a missing instance succeeds",
		Doc:   "Delete of a Machine that was never created returns OK.",
		Why:   "machine-controller calls Delete until it returns nil before it removes its finalizer; an error blocks the Machine's deletion forever.",
		run:   checkDeleteMissing,
	},
	{
		ID:       "delete.removes",
		Title:    "Delete removes the instance",
		Doc:      "Create, then Delete until it returns OK (ERROR means in progress), then Get returns not-found or status deleted.",
		Why:      "A Delete that reports success while the instance lives leaks it: the controller drops the Machine.",
		Stateful: true,
		run:      checkDeleteRemoves,
	},
	{
		ID:    "migrate-uid.get-by-new-uid",
		Title: "MigrateUID then Get by the new UID finds the instance",
		Doc:   "Create, MigrateUID to a new UID, then Get of the Machine with the new UID succeeds and (stateful) returns the same ID.",
		Why:   "After a migration the controller knows the Machine only by its new UID; a provider that still looks instances up by the old one loses them.",
		run:   checkMigrateUID,
	},
	{
		ID:    "metrics.size-label",
		Title: "MachineMetricsLabels contains size",
		Doc:   "MachineMetricsLabels of a valid Machine succeeds and has a non-empty \"size\" label.",
		Why:   "machine-controller's machine metrics are labelled by size; the interface documents it as always present.",
		run:   checkMetricsSize,
	},
	{
		ID:    "concurrency.independent",
		Title: "concurrent calls on different Machines are independent",
		Doc: "Config.Concurrency Machines are created, read and deleted concurrently: each Get returns the ID " +
			"its own Create returned, the IDs are distinct, every Delete succeeds and (stateful) nothing is left.",
		Why: "machine-controller reconciles Machines in parallel; shared state between them (a fixed name, a global) " +
			"hands one Machine another's instance.",
		run: checkConcurrency,
	},
	{
		ID:    "robustness.no-panics",
		Title: "no panics across all methods with fuzzed Machines",
		Doc: "Config.FuzzMachines Machines with random names, UIDs, labels, userdata and mutated or random provider " +
			"specs go through every method; errors are fine, but no call may trap, panic, return an invalid result or time out.",
		Why: "A trap loses the error message and costs a new instance; a panic on user input is a denial of service.",
		run: checkFuzz,
	},
}

func checkModule(t *T) error {
	if err := t.env.loadErr; err != nil {
		return failf("the host refused the module: %v", err)
	}
	t.notef("ABI version %d, declares %v", abi.Version, t.env.prov.Declared().Names())
	return nil
}

// importOf maps a capability to the import it grants.
var importOf = map[abi.Capability]string{
	abi.CapLog: abi.ImportLog, abi.CapHTTP: abi.ImportHTTP, abi.CapMachineUpdate: abi.ImportMachineUpdate,
	abi.CapPVList: abi.ImportPVList, abi.CapConfigVar: abi.ImportConfigVar,
}

func checkCapabilities(t *T) error {
	imports, err := moduleImports(t.env.wasm)
	if err != nil {
		return failf("cannot read the module's imports: %v", err)
	}
	imported := map[string]bool{}
	for _, im := range imports {
		if im[0] == abi.ModuleName {
			imported[im[1]] = true
		}
	}
	declared := t.env.prov.Declared()
	var problems []string
	for _, c := range []abi.Capability{abi.CapLog, abi.CapHTTP, abi.CapMachineUpdate, abi.CapPVList, abi.CapConfigVar} {
		name := importOf[c]
		switch {
		case declared.Has(c) && !imported[name] && c == abi.CapLog:
			// The Go SDK always declares log; it reaches nothing outside
			// the sandbox, so an unused declaration is only noted.
			t.notef("declares \"log\" but never logs")
		case declared.Has(c) && !imported[name]:
			problems = append(problems, fmt.Sprintf("declares %q but does not import %s.%s, so it can never use it: drop the declaration",
				c.Names()[0], abi.ModuleName, name))
		case !declared.Has(c) && imported[name]:
			t.notef("imports %s without declaring %q (harmless unless it calls it; SDKs often link every import)", name, c.Names()[0])
		}
	}
	for _, d := range t.env.denied.list() {
		problems = append(problems, "called "+d+" without declaring its capability: the call failed with NOT_DECLARED")
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

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
	d1, err := t.env.p.AddDefaults(ctx, spec)
	if err != nil {
		return failf("AddDefaults of the valid spec failed: %s", describe(err))
	}
	d2, err := t.env.p.AddDefaults(ctx, d1)
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
	if d, err := t.env.p.AddDefaults(ctx, spec); err == nil {
		spec = d
	}
	if err := t.env.p.Validate(ctx, spec); err != nil {
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
	return wantInvalidConfiguration(t.env.p.Validate(ctx, spec), "a spec without providerSpec")
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
		if err := wantInvalidConfiguration(t.env.p.Validate(ctx, spec), "providerSpec.value "+g); err != nil {
			errs = append(errs, err.Error())
		}
		cancel()
	}
	if len(errs) > 0 {
		return failf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

func checkGetUnknown(t *T) error {
	ctx, cancel := t.call()
	defer cancel()
	inst, err := t.env.p.Get(ctx, t.machine(0))
	if err == nil {
		return failf("Get of a Machine that was never created returned %s; want instance-not-found (status 3)", describeInstance(inst))
	}
	if !isNotFound(err) {
		return failf("Get of a Machine that was never created returned a %s; want instance-not-found (status 3)", describe(err))
	}
	return nil
}

// createData is what the host passes to Create and Delete: an updater that
// applies changes to a copy (there is no API server) and an empty PV lister.
func createData() *cloud.MachineCreateDeleteData {
	var mu sync.Mutex
	return &cloud.MachineCreateDeleteData{
		Updater: func(m *clusterv1alpha1.Machine, mod func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			mu.Lock()
			defer mu.Unlock()
			c := m.DeepCopy()
			mod(c)
			return c, nil
		},
		PVLister: listerscorev1.NewPersistentVolumeLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
	}
}

const userdata = "#cloud-config\n# wasmprov conformance\n"

// create creates m and registers its deletion at the end of the check.
func (t *T) create(m *clusterv1alpha1.Machine) (instance.Instance, error) {
	ctx, cancel := t.call()
	defer cancel()
	inst, err := t.env.p.Create(ctx, m, createData(), userdata)
	if err == nil && inst != nil {
		mc := m.DeepCopy()
		t.defer_(func() { _ = t.deleteAll(mc) })
	}
	return inst, err
}

func (t *T) get(m *clusterv1alpha1.Machine) (instance.Instance, error) {
	ctx, cancel := t.call()
	defer cancel()
	return t.env.p.Get(ctx, m)
}

// deleteAll calls Delete until it returns OK, as the controller does:
// ERROR means "in progress, call again".
func (t *T) deleteAll(m *clusterv1alpha1.Machine) error {
	var err error
	for attempt := 0; attempt < 15; attempt++ {
		ctx, cancel := t.call()
		err = t.env.p.Delete(ctx, m, createData())
		cancel()
		if err == nil {
			return nil
		}
		if sandboxFailure(err) {
			return err
		}
		if ok, _, _ := cloudprovidererrors.IsTerminalError(err); ok || isNotFound(err) {
			return err
		}
		if t.env.replay == nil {
			time.Sleep(time.Duration(min(attempt+1, 10)) * 20 * time.Millisecond)
		}
	}
	return err
}

func checkCreateGet(t *T) error {
	m := t.machine(0)
	created, err := t.create(m)
	if err != nil {
		return failf("Create failed: %s", describe(err))
	}
	if created.ID() == "" {
		return failf("Create returned %s with an empty ID", describeInstance(created))
	}
	got, err := t.get(m)
	if err != nil {
		return failf("Get after Create failed: %s (Create returned %s)", describe(err), describeInstance(created))
	}
	if got.ID() != created.ID() {
		return failf("Create returned ID %q but Get returned ID %q", created.ID(), got.ID())
	}
	return nil
}

func checkCreateIdempotent(t *T) error {
	m := t.machine(0)
	first, err := t.create(m)
	if err != nil {
		return failf("first Create failed: %s", describe(err))
	}
	second, err := t.create(m)
	switch {
	case err == nil && second.ID() != first.ID():
		return failf("second Create for the same Machine returned a new instance: first ID %q, second ID %q", first.ID(), second.ID())
	case err != nil && sandboxFailure(err):
		return failf("second Create failed in the sandbox: %s", describe(err))
	case err != nil:
		t.notef("second Create returned %s (accepted: no second instance was reported)", describe(err))
	}
	got, err := t.get(m)
	if err != nil {
		return failf("Get after two Creates failed: %s", describe(err))
	}
	if got.ID() != first.ID() {
		return failf("Get after two Creates returned ID %q, the first Create returned %q", got.ID(), first.ID())
	}
	if !t.env.stateful {
		return nil
	}
	if err := t.deleteAll(m); err != nil {
		return failf("Delete after two Creates failed: %s", describe(err))
	}
	if left, err := t.get(m); err == nil {
		return failf("after Delete, Get still finds %s: the second Create made another instance", describeInstance(left))
	}
	return nil
}

func checkDeleteMissing(t *T) error {
	ctx, cancel := t.call()
	defer cancel()
	if err := t.env.p.Delete(ctx, t.machine(0), createData()); err != nil {
		return failf("Delete of a Machine that was never created returned a %s; want success", describe(err))
	}
	return nil
}

func checkDeleteRemoves(t *T) error {
	m := t.machine(0)
	if _, err := t.create(m); err != nil {
		return failf("Create failed: %s", describe(err))
	}
	if err := t.deleteAll(m); err != nil {
		return failf("Delete failed: %s", describe(err))
	}
	inst, err := t.get(m)
	switch {
	case err == nil && inst.Status() == instance.StatusDeleted:
		return nil
	case err == nil:
		return failf("after Delete returned OK, Get still finds %s; want not-found (or status deleted)", describeInstance(inst))
	case !isNotFound(err):
		return failf("after Delete, Get returned a %s; want not-found", describe(err))
	}
	return nil
}

func checkMigrateUID(t *T) error {
	m := t.machine(0)
	created, err := t.create(m)
	if err != nil {
		return failf("Create failed: %s", describe(err))
	}
	newUID := uid(t.id + "/migrated")
	migrated := m.DeepCopy()
	migrated.UID = newUID
	t.defer_(func() { _ = t.deleteAll(migrated) })
	ctx, cancel := t.call()
	defer cancel()
	if err := t.env.p.MigrateUID(ctx, m, newUID); err != nil {
		return failf("MigrateUID failed: %s", describe(err))
	}
	got, err := t.get(migrated)
	if err != nil {
		return failf("Get of the Machine with its new UID failed: %s", describe(err))
	}
	if t.env.stateful && got.ID() != created.ID() {
		return failf("Get by the new UID returned ID %q, Create had returned %q", got.ID(), created.ID())
	}
	return nil
}

func checkMetricsSize(t *T) error {
	ctx, cancel := t.call()
	defer cancel()
	labels, err := t.env.p.MachineMetricsLabels(ctx, t.machine(0))
	if err != nil {
		return failf("MachineMetricsLabels failed: %s", describe(err))
	}
	if labels["size"] == "" {
		return failf("MachineMetricsLabels returned %v, which has no non-empty \"size\" label", labels)
	}
	return nil
}

func checkConcurrency(t *T) error {
	n := t.env.cfg.Concurrency
	ms := make([]*clusterv1alpha1.Machine, n)
	for i := range ms {
		ms[i] = t.machine(i)
	}
	each := func(f func(i int) error) error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(i)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	created := make([]instance.Instance, n)
	if err := each(func(i int) (err error) {
		created[i], err = t.create(ms[i])
		if err != nil {
			return failf("Create of %s failed: %s", ms[i].Name, describe(err))
		}
		return nil
	}); err != nil {
		return err
	}
	owner := map[string]string{}
	var errs []error
	for i, c := range created {
		if prev, ok := owner[c.ID()]; ok {
			errs = append(errs, failf("Machines %s and %s got the same instance ID %q", prev, ms[i].Name, c.ID()))
		}
		owner[c.ID()] = ms[i].Name
	}
	errs = append(errs, each(func(i int) error {
		got, err := t.get(ms[i])
		if err != nil {
			return failf("Get of %s failed: %s", ms[i].Name, describe(err))
		}
		if got.ID() != created[i].ID() {
			return failf("Get of %s returned ID %q (%s's), its Create returned %q", ms[i].Name, got.ID(), owner[got.ID()], created[i].ID())
		}
		return nil
	}))
	errs = append(errs, each(func(i int) error {
		if err := t.deleteAll(ms[i]); err != nil {
			return failf("Delete of %s failed: %s", ms[i].Name, describe(err))
		}
		return nil
	}))
	if t.env.stateful {
		errs = append(errs, each(func(i int) error {
			if inst, err := t.get(ms[i]); err == nil && inst.Status() != instance.StatusDeleted {
				return failf("after Delete, Get of %s still finds %s", ms[i].Name, describeInstance(inst))
			}
			return nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return failf("%v", err)
	}
	return nil
}
