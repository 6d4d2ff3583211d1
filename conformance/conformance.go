// Package conformance checks a wasmprov provider module against the
// contract machine-controller relies on. The same suite runs from the
// command line (`wasmprov conformance PROVIDER.wasm`) and from a provider's
// own `go test` (RunT).
//
// Every check has an ID, a one-line title and a documented reason (see
// Checks and RATIONALE.md). A run yields a Report that prints as human text,
// JUnit XML or JSON.
//
// Checks that need a cloud talk to it through the host's http_do, so they
// run against a live simulator, a cassette replayed offline
// (Config.Cassette), or record a cassette from a simulator
// (Config.Record). The provider keeps calling its cloud's real API
// (https://api.example.com) and a host alias in Config.Policy.HostAliases
// sends those requests to a simulator on loopback, so the Machine spec is
// the one the provider's users write; cassettes store the real URLs and
// replay without the alias. A provider whose spec names its endpoint can
// instead be given Config.CloudURL: "${CLOUD_URL}" in Config.ProviderSpec
// is replaced by the URL to use.
//
// The suite calls a provider as machine-controller does: its Machines live
// in an in-memory store, what the provider writes with machine_update in
// Create and Delete goes through a MachineUpdater (resourceVersions,
// conflicts re-applied), and every later call receives the updated Machine.
// abi/SPEC.md §11 specifies the profiles and every check.
//
// Providers that keep no state, like machine-controller's fake provider
// whose Get always finds an instance, declare ProfileStateless: checks that
// need a provider to remember what it created are then skipped, and say so.
// A check of a SHOULD rule that is not met is a warning (Warn), not a
// failure.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// Profile says what a provider can be expected to do.
type Profile string

const (
	// ProfileStateful is a provider backed by a cloud: what Create makes,
	// Get finds and Delete removes. The default.
	ProfileStateful Profile = "stateful"
	// ProfileStateless is a provider that remembers nothing, such as
	// machine-controller's fake provider: Get finds an instance for every
	// Machine. Checks that need state are skipped.
	ProfileStateless Profile = "stateless"
	// ProfileFaults is ProfileStateful and the faults.* checks: transport
	// faults (connection resets before and after the cloud handled a
	// request, 503s, responses held until shortly before the deadline)
	// injected into one request of a call at a time.
	ProfileFaults Profile = "faults"
)

// CanonicalCloudURL is the cloud URL a provider is configured with when the
// suite replays or records a cassette: requests to it are answered from the
// cassette, or forwarded to Config.CloudURL while recording. Using one fixed
// URL keeps cassettes independent of the port a simulator listened on.
const CanonicalCloudURL = "http://cloud.wasmprov.test"

// Config describes a conformance run.
type Config struct {
	// Module is the path of the provider module; or set Wasm.
	Module string
	// Wasm is the module's bytes, when Module is empty.
	Wasm []byte
	// Name names the provider in the report (default: Module's base name).
	Name string

	// ProviderSpec is spec.providerSpec.value of a Machine the provider
	// accepts, e.g. {"cloudProvider":"fake","cloudProviderSpec":{"passValidation":true}}.
	// Every occurrence of ${CLOUD_URL} is replaced by the cloud URL in use.
	ProviderSpec json.RawMessage
	// Profile is ProfileStateful unless set.
	Profile Profile
	// Policy is the host policy the provider runs under. The cloud URL's
	// host is added to AllowedHosts (and plain http allowed for it), and
	// so is every HostAliases host: an alias such as
	// "api.digitalocean.com" → "http://127.0.0.1:8080" is how a provider
	// calling its real API reaches a simulator. While recording, the
	// recorder follows the aliases and the cassette keeps the URLs the
	// provider asked for; a replay needs no alias.
	Policy runtime.Policy

	// CloudURL is a live cloud or simulator the provider's spec names
	// through ${CLOUD_URL}. Without Cassette, requests go there directly.
	// Not needed with host aliases.
	CloudURL string
	// Cassette is a cassette file: replayed offline, or written when Record
	// is set (which needs CloudURL).
	Cassette string
	// Record records the run's HTTP traffic into Cassette.
	Record bool
	// Redact names the secrets to keep out of a recorded cassette (headers
	// such as Authorization are redacted by default). Replay uses the same
	// redaction to match requests.
	Redact cassette.Redaction
	// Ignore lists request fields that change from run to run (a generated
	// key, a random suffix) and so are not compared on replay.
	Ignore []cassette.Ignore

	// Journal is a file where the run keeps every Machine it may have
	// made an instance for and has not seen deleted (written before each
	// Create, updated as the provider changes the Machine, cleared by a
	// successful Delete). A run killed half-way, or one whose Delete
	// failed, leaves them there: the next run reports them and Sweep
	// deletes them. Ignored on replay, which creates nothing. Empty: the
	// run's report still lists what it could not delete, but nothing is
	// kept for later (the CLI keeps a journal per provider in the user's
	// cache).
	Journal string
	// Sweep runs no check: it deletes every Machine of Journal with the
	// provider's own Delete (after a Get that finds its instance) and
	// reports in Report.Swept and Report.Leftovers what was removed and
	// what could not be.
	Sweep bool

	// Checks selects checks by ID or by a prefix that ends at a dot
	// ("validate." or "validate"); empty runs every check. A selector that
	// matches no check makes Run fail, listing the IDs (CheckIDs).
	Checks []string
	// Seed seeds the fuzzed Machines (default 1): a run is reproducible.
	Seed uint64
	// FuzzMachines is how many fuzzed Machines robustness.no-panics sends
	// through every method (default 24).
	FuzzMachines int
	// Concurrency is how many Machines concurrency.independent drives at
	// once (default 4).
	Concurrency int
	// CallTimeout bounds each provider call (default 30s).
	CallTimeout time.Duration

	// Engine runs the provider (default: the runtime's, wazero).
	Engine runtime.Engine
	// CompilationCacheDir keeps compiled modules across runs.
	CompilationCacheDir string
	// Logger receives the host's and the guest's log records (default:
	// discarded).
	Logger *slog.Logger
	// Kube is the Kubernetes client the host's config_var reads Secrets and
	// ConfigMaps through (runtime.WithKubernetesClient), for a provider
	// spec with secretKeyRef or configMapKeyRef. Only what the Machine
	// references is read. Nil: such references fail with FAILED.
	Kube runtime.KubernetesClient
	// randomProbe replaces the random probe module (tests of the suite).
	randomProbe []byte

	// HostFunctions are the embedder's custom host functions
	// (runtime.WithHostFunctions) a provider importing them runs with;
	// Policy.Capabilities must grant theirs. Without them such a
	// provider fails abi.module: the import is from an unknown module.
	HostFunctions []hostfuncs.Function
}

// env is what checks work with.
type env struct {
	cfg  Config
	wasm []byte
	// spec is the configured provider spec; defaulted is spec after
	// AddDefaults, which is what machine-controller's webhook stores and
	// so what Machines carry in every other check.
	spec, defaulted json.RawMessage
	rt              *runtime.Runtime
	prov            *runtime.Provider
	// p is prov: its Delete answers as the module did (NOT_FOUND and
	// IN_PROGRESS as errors), which checks judge.
	p        *runtime.Provider
	replay   *cassette.Replayer
	denied   *deniedLog
	loadErr  error
	stateful bool
	// neverDeletes is set once a Delete stayed in progress for its whole
	// budget: later deletions get one call, not another budget each.
	neverDeletes atomic.Bool
	// journal remembers the Machines that may have instances (nil on a
	// replay or without Config.Journal); notDeleted says why the cleanup
	// of a check could not delete one, by journalKey.
	journal    *journal
	mu         sync.Mutex
	notDeleted map[string]error
}

// Run runs the suite. The error reports a run that could not start (an
// unreadable module or cassette); a provider that fails checks yields a
// Report whose Passed is false.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	cfg, wasm, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, wasm: wasm, denied: &deniedLog{}, stateful: cfg.Profile != ProfileStateless}
	rep := &Report{Provider: cfg.Name, Profile: cfg.Profile}

	cloudURL, transport, recorder, err := e.cloud(rep)
	if err != nil {
		return nil, err
	}
	if e.replay == nil {
		if e.journal, err = openJournal(cfg.Journal, cfg.Name, rep.Cloud); err != nil {
			return nil, err
		}
	}
	e.spec = json.RawMessage(strings.ReplaceAll(string(cfg.ProviderSpec), "${CLOUD_URL}", cloudURL))
	if !json.Valid(e.spec) {
		return nil, fmt.Errorf("provider spec is not valid JSON (after substituting ${CLOUD_URL}): %s", e.spec)
	}
	policy, err := runPolicy(cfg, cloudURL)
	if err != nil {
		return nil, err
	}

	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := []runtime.Option{runtime.WithEngine(cfg.Engine),
		runtime.WithLogger(slog.New(&captureHandler{log: e.denied, next: logger.Handler()}))}
	if cfg.CompilationCacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(cfg.CompilationCacheDir))
	}
	if cfg.Kube != nil {
		opts = append(opts, runtime.WithKubernetesClient(cfg.Kube))
	}
	switch {
	case cfg.Profile == ProfileFaults:
		// Faults are injected in front of whatever answers: the cloud, the
		// recorder or the replayer. An injected fault never reaches a
		// cassette, so a faulted run records and replays the same way.
		opts = append(opts, runtime.WithHTTPTransport(func(base http.RoundTripper) http.RoundTripper {
			if transport != nil {
				base = transport
			}
			return faultTransport{base: base}
		}))
	case transport != nil:
		opts = append(opts, runtime.WithHTTPTransport(func(http.RoundTripper) http.RoundTripper { return transport }))
	}
	if len(cfg.HostFunctions) > 0 {
		opts = append(opts, runtime.WithHostFunctions(cfg.HostFunctions...))
	}
	rt, err := runtime.New(opts...)
	if err != nil {
		return nil, err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	e.rt = rt
	e.prov, e.loadErr = rt.LoadBytes(ctx, cfg.Name, wasm, runtime.WithPolicy(policy))
	if e.loadErr == nil {
		e.p = e.prov
		rep.SHA256 = e.prov.SHA256()
		rep.Capabilities = e.prov.Declared().Names()
		e.applyDefaults(ctx)
	}

	earlier := e.journal.entries()
	switch {
	case cfg.Sweep && e.loadErr != nil:
		return nil, fmt.Errorf("sweeping: the module did not load: %w", e.loadErr)
	case cfg.Sweep:
		rep.Swept, rep.Leftovers = e.sweep(ctx, earlier)
	default:
		rep.Results = e.runChecks(ctx)
		rep.Leftovers = e.leftovers(earlier)
	}
	if err := e.journal.err(); err != nil {
		return rep, err
	}
	if recorder != nil {
		if err := recorder.Save(cfg.Cassette); err != nil {
			return rep, fmt.Errorf("saving cassette: %w", err)
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// prepare applies cfg's defaults, checks it and returns it with the
// module's bytes.
func prepare(cfg Config) (Config, []byte, error) {
	if cfg.Profile == "" {
		cfg.Profile = ProfileStateful
	}
	if cfg.Profile != ProfileStateful && cfg.Profile != ProfileStateless && cfg.Profile != ProfileFaults {
		return cfg, nil, fmt.Errorf("unknown profile %q (want %q, %q or %q)", cfg.Profile, ProfileStateful, ProfileStateless, ProfileFaults)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.FuzzMachines <= 0 {
		cfg.FuzzMachines = 24
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	wasm := cfg.Wasm
	if cfg.Module != "" {
		b, err := os.ReadFile(cfg.Module)
		if err != nil {
			return cfg, nil, err
		}
		wasm = b
		if cfg.Name == "" {
			cfg.Name = strings.TrimSuffix(filepath.Base(cfg.Module), ".wasm")
		}
	}
	if len(wasm) == 0 {
		return cfg, nil, fmt.Errorf("no module: set Config.Module or Config.Wasm")
	}
	if cfg.Name == "" {
		cfg.Name = "provider"
	}
	if len(cfg.ProviderSpec) == 0 {
		return cfg, nil, fmt.Errorf("no provider spec: set Config.ProviderSpec to the providerSpec.value of a Machine the provider accepts")
	}
	if cfg.Sweep && (cfg.Journal == "" || cfg.Cassette != "") {
		return cfg, nil, fmt.Errorf("sweeping needs the journal of the runs to sweep (Config.Journal) and their cloud, not a cassette")
	}
	if err := CheckSelection(cfg.Checks); err != nil {
		return cfg, nil, err
	}
	if cfg.Record && (cfg.Cassette == "" || (cfg.CloudURL == "" && len(cfg.Policy.HostAliases) == 0)) {
		return cfg, nil, fmt.Errorf("recording needs a cassette file and a cloud to record from: a cloud URL, or host aliases in the policy")
	}
	return cfg, wasm, nil
}

// applyDefaults computes e.defaulted. If AddDefaults fails, the configured
// spec is used (and add-defaults.idempotent reports the failure).
func (e *env) applyDefaults(ctx context.Context) {
	e.defaulted = e.spec
	ctx, cancel := context.WithTimeout(provider.WithMachineNamespace(cassette.WithScope(ctx, "setup"), machineNamespace), e.cfg.CallTimeout)
	defer cancel()
	m := newMachine("wpc-setup", uid("setup"), e.spec)
	if d, err := e.p.AddDefaults(ctx, m.Spec, nil); err == nil && d.ProviderSpec.Value != nil && json.Valid(d.ProviderSpec.Value.Raw) {
		e.defaulted = d.ProviderSpec.Value.Raw
	}
}
