package conformance

import (
	"fmt"
	"strings"
)

// Level says what a check's rule is in abi/SPEC.md §11: a MUST whose
// violation fails the run, or a SHOULD whose violation is a warning.
type Level string

// Levels.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
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
	// Level is Must unless the rule is a SHOULD: then a violation is
	// reported as Warn and the run still passes.
	Level Level
	// Stateful checks need ProfileStateful or ProfileFaults.
	Stateful bool
	// Faults checks run in ProfileFaults only.
	Faults bool

	last bool
	run  func(*T) error
}

// Checks is the suite, in report order. abi/SPEC.md §11 lists the same
// checks (a test compares the two).
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
		Title: "the provider calls no host function it did not declare",
		Doc: "Across the whole run, no host function was refused because its capability was not declared. " +
			"Runs after every other check, so it sees all their calls.",
		Why:  "An undeclared call fails in production with NOT_DECLARED.",
		last: true,
		run:  checkCapabilities,
	},
	{
		ID:    "abi.no-unused-capabilities",
		Title: "the provider declares no outside-reaching capability it cannot use",
		Doc: "No capability that reaches outside the sandbox (http, machine_update, pv_list, config_var) is " +
			"declared whose host function the module does not even import.",
		Why: "An unused declaration asks the operator's policy for more than the provider needs; " +
			"it works, so it is a warning.",
		Level: Should,
		run:   checkUnusedCapabilities,
	},
	{
		ID:    "sandbox.random-per-instance",
		Title: "two instances on this host draw different random bytes",
		Doc: "A probe module loaded twice on the run's runtime (its engine and options) reads 16 bytes of WASI " +
			"random_get in each instance; the two differ. It checks the host the provider runs on, not the provider.",
		Why: "A provider's crypto/rand is the host's random_get: on a host that gives every instance the same stream, " +
			"every throw-away SSH key a provider installs (upstream's DigitalOcean provider makes one per droplet) is the same, and predictable.",
		run: checkRandomPerInstance,
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
		Doc: "Create returns an instance with a non-empty ID; Get of the Machine as Create left it " +
			"(with its machine_update changes) returns that ID.",
		Why: "The controller tracks the instance through Get; an ID that changes makes it lose the instance (and leak it).",
		run: checkCreateGet,
	},
	{
		ID:    "create.idempotent",
		Title: "a second Create for the same Machine does not make a second instance",
		Doc: "Create twice with the same Machine (the second as the first left it): the second returns the " +
			"first instance's ID, or an error (not a trap); Get still returns the first ID; (stateful) after " +
			"Delete, Get finds nothing.",
		Why: "The controller may call Create again when an update of the Machine failed after Create succeeded; " +
			"a second instance is paid for and never deleted.",
		run: checkCreateIdempotent,
	},
	{
		ID:    "delete.missing-ok",
		Title: "Delete of a missing instance succeeds",
		Doc:   "Delete of a Machine that was never created returns OK (for an async_delete module, after at most 30 IN_PROGRESS answers).",
		Why:   "machine-controller calls Delete until it returns nil before it removes its finalizer; an error blocks the Machine's deletion forever.",
		run:   checkDeleteMissing,
	},
	{
		ID:    "delete.removes",
		Title: "Delete removes the instance",
		Doc: "Create, then Delete until it returns OK (ERROR means in progress, as does IN_PROGRESS from an " +
			"async_delete module; a deletion still in progress after 30 calls fails), then Get returns not-found " +
			"or status deleted.",
		Why:      "A Delete that reports success while the instance lives leaks it: the controller drops the Machine.",
		Stateful: true,
		run:      checkDeleteRemoves,
	},
	{
		ID:    "migrate-uid.get-by-new-uid",
		Title: "MigrateUID then Get by the new UID finds the instance",
		Doc: "Create, MigrateUID to a new UID, then Get of the Machine with the new UID succeeds and " +
			"(stateful) returns the same ID.",
		Why: "After a migration the controller knows the Machine only by its new UID; a provider that still looks instances up by the old one loses them.",
		run: checkMigrateUID,
	},
	{
		ID:    "migrate-uid.old-uid-forgotten",
		Title: "after MigrateUID the old UID no longer finds the instance",
		Doc: "Create, MigrateUID to a new UID, then Get of a Machine with the old UID and nothing the provider " +
			"recorded on it (no annotations, no providerID) returns not-found.",
		Why: "The Machine with the old UID is gone after a migration; an instance still found by it is claimed twice, and " +
			"anything that removes the old Machine's instance (its deletion, an orphan sweep by UID) deletes the live one.",
		Stateful: true,
		run:      checkMigrateForgetsOldUID,
	},
	{
		ID:    "metrics.size-label",
		Title: "MachineMetricsLabels contains size",
		Doc:   "MachineMetricsLabels of a valid Machine succeeds and has a non-empty \"size\" label.",
		Why: "machine-controller labels its machine metrics with these labels, and its interface says a provider " +
			"should always return \"size\"; metrics grouped by size miss the Machine. Nothing else depends on it, " +
			"so it is a warning.",
		Level: Should,
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
		ID:    "faults.create",
		Title: "a transport fault in Create fails cleanly and the retry leaves one instance",
		Doc: "For each fault (connection reset before the request, connection reset after the cloud handled it, 503, " +
			"a response held until 1 s before a 2 s deadline) at each request of a Create in turn (up to 8): " +
			"Create returns an error or an instance, never traps; the next Create succeeds, Get returns its ID, and " +
			"after Delete nothing is left.",
		Why: "Networks reset and clouds answer 503. A provider that dereferences a missing response crashes its " +
			"instance on the first blip; one that does not find the instance its lost-response Create made pays for a " +
			"second one that nothing deletes.",
		Stateful: true,
		Faults:   true,
		run:      checkFaultsCreate,
	},
	{
		ID:    "faults.get",
		Title: "a transport fault in Get is never instance-not-found",
		Doc: "With an instance created, each fault at each request of a Get in turn: Get returns the instance or an " +
			"error that is not instance-not-found, and never traps.",
		Why: "machine-controller creates an instance for a Machine whose Get says not-found: a 503 taken for " +
			"\"no instance\" makes a second one.",
		Stateful: true,
		Faults:   true,
		run:      checkFaultsGet,
	},
	{
		ID:    "faults.delete",
		Title: "a transport fault in Delete never reports a live instance deleted",
		Doc: "For each fault at each request of a Delete in turn, on a fresh instance: Delete never traps, and when it " +
			"returns OK, Get finds no instance; deleting then completes.",
		Why:      "On success the controller removes the Machine's finalizer: an instance whose DELETE was lost is paid for forever.",
		Stateful: true,
		Faults:   true,
		run:      checkFaultsDelete,
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

func init() {
	for i := range Checks {
		if Checks[i].Level == "" {
			Checks[i].Level = Must
		}
	}
}

// CheckIDs returns the IDs of every check, in report order.
func CheckIDs() []string {
	ids := make([]string, len(Checks))
	for i, c := range Checks {
		ids[i] = c.ID
	}
	return ids
}

// selects reports whether the selector s picks check id: s is the ID
// itself, or a prefix ending at a dot ("validate." or "validate").
func selects(s, id string) bool {
	return s == id || (strings.HasSuffix(s, ".") && strings.HasPrefix(id, s)) || strings.HasPrefix(id, s+".")
}

func selected(sel []string, id string) bool {
	if len(sel) == 0 {
		return true
	}
	for _, s := range sel {
		if selects(s, id) {
			return true
		}
	}
	return false
}

// CheckSelection refuses selectors (Config.Checks) that pick no check: a
// typo would otherwise run nothing and pass. Run calls it; a CLI can call
// it before loading anything.
func CheckSelection(sel []string) error {
	var unknown []string
	for _, s := range sel {
		found := false
		for _, c := range Checks {
			if selects(s, c.ID) {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, fmt.Sprintf("%q", s))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("no check matches %s: use a check ID or a prefix that ends at a dot (\"validate.\"); the checks are %s",
		strings.Join(unknown, ", "), strings.Join(CheckIDs(), ", "))
}
