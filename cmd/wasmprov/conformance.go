package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/conformance"

	"k8s.io/client-go/kubernetes"
)

func init() {
	register("conformance", "check a provider module against the provider contract", runConformance)
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runConformance(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: wasmprov conformance [flags] PROVIDER.wasm

Runs the conformance checks against PROVIDER.wasm and prints one line per
check. Exit status 1 if any check fails. See docs/AUTHORING.md.

Checks:
`)
		for _, c := range conformance.Checks {
			extra := ""
			switch {
			case c.Faults:
				extra = " [faults profile]"
			case c.Stateful:
				extra = " [stateful only]"
			}
			fmt.Fprintf(fs.Output(), "  %-30s %s%s\n", c.ID, c.Title, extra)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	specArg := fs.String("spec", "", "providerSpec.value of a Machine the provider accepts, as its users write it: a JSON file, or inline JSON; ${CLOUD_URL} is replaced by the cloud URL in use (required)")
	profile := fs.String("profile", string(conformance.ProfileStateful), "stateful (the provider keeps instances in a cloud), stateless (like machine-controller's fake: Get finds every Machine) "+
		"or faults (stateful, plus transport faults injected into one request at a time)")
	cloudURL := fs.String("cloud-url", "", "a live cloud or simulator a spec names with ${CLOUD_URL}; with --cassette and --record, the recording target (prefer --alias)")
	cass := fs.String("cassette", "", "replay this cassette offline (or write it with --record)")
	record := fs.Bool("record", false, "record the HTTP traffic into --cassette, from --cloud-url or the --alias targets")
	journalFile := fs.String("journal", "", "where a live run keeps the Machines it may have left instances for (default: one per provider in the user's cache, "+
		"$XDG_CACHE_HOME/wasmprov/conformance/NAME.journal.json; '-' for none)")
	sweep := fs.Bool("sweep", false, "run no check: delete the instances of every Machine earlier runs left in --journal, with the provider's own Get and Delete, and list what could not be removed")
	var secrets, checks, hosts, ignores listFlag
	fs.Var(&secrets, "secret", "a secret value to redact from a recording (repeatable)")
	fs.Var(&checks, "check", "run only this check ID, or the checks under a group such as 'create' or 'create.' (repeatable; one that selects no check is an error)")
	fs.Var(&ignores, "ignore", "on replay, do not compare these request body fields: 'METHOD PATH-SUFFIX field,field' (repeatable)")
	fs.Var(&hosts, "allow-host", "add a host to the policy's allowed hosts (repeatable)")
	policyF := addPolicyFlags(fs, "a policy file (runtime.Policy, YAML or JSON, as for call) to run the provider under")
	junit := fs.String("junit", "", "write a JUnit XML report to this file")
	jsonOut := fs.String("json", "", "write a JSON report to this file ('-' for stdout instead of text)")
	seed := fs.Uint64("seed", 1, "seed of the fuzzed Machines")
	fuzzN := fs.Int("fuzz", 24, "number of fuzzed Machines")
	verbose := fs.Bool("v", false, "show the host's and the provider's log records")
	// -cache as in call and serve, on by default: a large guest takes
	// tens of seconds to compile, every run. -cache-dir is its old name.
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	fs.StringVar(cacheDir, "cache-dir", defaultCacheDir(), "the same as -cache (its former name)")
	kubeF := addKubeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("expected one PROVIDER.wasm")
	}
	if err := conformance.CheckSelection(checks); err != nil {
		return err
	}
	spec, err := readSpecFlag(*specArg)
	if err != nil {
		return err
	}
	ignore, err := parseIgnoreFlags(ignores)
	if err != nil {
		return err
	}
	policy, _, err := policyF.policy()
	if err != nil {
		return err
	}
	policy.AllowedHosts = append(policy.AllowedHosts, hosts...)
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	kube, err := kubeF.client()
	if err != nil {
		return err
	}
	journal, err := journalPath(*journalFile, fs.Arg(0))
	if err != nil {
		return err
	}
	cfg := conformance.Config{
		Module:              fs.Arg(0),
		Journal:             journal,
		Sweep:               *sweep,
		ProviderSpec:        json.RawMessage(spec),
		Profile:             conformance.Profile(*profile),
		Policy:              policy,
		CloudURL:            *cloudURL,
		Cassette:            *cass,
		Record:              *record,
		Redact:              cassette.Redaction{Secrets: secrets},
		Ignore:              ignore,
		Checks:              checks,
		Seed:                *seed,
		FuzzMachines:        *fuzzN,
		Engine:              engine(),
		CompilationCacheDir: *cacheDir,
		Logger:              logger,
	}
	if err := setConformanceKube(&cfg, kube); err != nil {
		return err
	}
	rep, err := conformance.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := writeReports(rep, *junit, *jsonOut); err != nil {
		return err
	}
	if !rep.Passed() {
		if failed := rep.Failed(); len(failed) > 0 {
			return fmt.Errorf("%d check(s) failed: %s", len(failed), strings.Join(failed, ", "))
		}
		return fmt.Errorf("instances may be left in the cloud (listed above): run again with --sweep once the cause is fixed")
	}
	return nil
}

// journalPath is --journal: the user's cache by default, keyed by the
// module's name, or none ('-').
func journalPath(flagValue, module string) (string, error) {
	switch flagValue {
	case "-":
		return "", nil
	case "":
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the conformance journal (%w): give --journal FILE, or --journal - for none", err)
		}
		return filepath.Join(dir, "wasmprov", "conformance", strings.TrimSuffix(filepath.Base(module), ".wasm")+".journal.json"), nil
	}
	return flagValue, nil
}

// readSpecFlag is --spec's providerSpec.value: inline JSON, or the
// content of the file it names.
func readSpecFlag(specArg string) ([]byte, error) {
	if specArg == "" {
		return nil, errors.New("--spec is required: the providerSpec.value of a Machine the provider accepts")
	}
	spec := []byte(specArg)
	if !strings.HasPrefix(strings.TrimSpace(specArg), "{") {
		b, err := os.ReadFile(specArg)
		if err != nil {
			return nil, fmt.Errorf("--spec: %w", err)
		}
		spec = b
	}
	return spec, nil
}

// parseIgnoreFlags parses the --ignore flags ('METHOD PATH-SUFFIX
// field,field').
func parseIgnoreFlags(ignores []string) ([]cassette.Ignore, error) {
	var ignore []cassette.Ignore
	for _, s := range ignores {
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, fmt.Errorf("--ignore %q: want 'METHOD PATH-SUFFIX field,field'", s)
		}
		ignore = append(ignore, cassette.Ignore{Method: f[0], Path: f[1], Fields: strings.Split(f[2], ",")})
	}
	return ignore, nil
}

// writeReports writes rep as text to stdout (unless --json is "-") and
// as JUnit and JSON where --junit and --json say.
func writeReports(rep *conformance.Report, junit, jsonOut string) error {
	if jsonOut != "-" {
		if err := rep.WriteText(stdout); err != nil {
			return err
		}
	}
	if err := writeReport(junit, rep.WriteJUnit); err != nil {
		return err
	}
	return writeReport(jsonOut, rep.WriteJSON)
}

// writeReport writes a report with f to path: nothing if path is "",
// stdout if it is "-".
func writeReport(path string, f func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	if path == "-" {
		return f(stdout)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// setConformanceKube gives the run the client that --kubeconfig,
// --secret-file and --configmap-file ask for (nil: none). Until
// conformance.Config has a Kube field the flags are refused rather than
// ignored: a run that cannot resolve the references the flags were given
// for would fail checks for a reason it does not say.
func setConformanceKube(cfg *conformance.Config, kube kubernetes.Interface) error {
	if kube == nil {
		return nil
	}
	cfg.Kube = kube
	return nil
}
