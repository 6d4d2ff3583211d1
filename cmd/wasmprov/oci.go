package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

func init() {
	register("push", "push a provider module to an OCI registry as a Wasm artifact", withHints(runPush))
	register("pull", "pull a provider module from an OCI registry (by digest: from the local store when it has it)", withHints(runPull))
	register("digest", "print the manifest digest a reference names now", withHints(runDigest))
	register("save", "write artifacts to an OCI image layout tar, for an air-gapped install", withHints(runSave))
	register("load", "put the artifacts of an OCI image layout tar into the local store", withHints(runLoad))
}

// ociFlags are the registry and store flags of the OCI commands.
type ociFlags struct {
	store, dockerConfig, caFile string
	storeBytes, maxBlob         int64
	plainHTTP                   bool
	redirectHosts               listFlag
	timeout                     time.Duration
	log                         *logFlags

	reads  ociReads
	hidden map[string]bool // flags registered but not read, left out of the help
}

// ociReads says which groups of the OCI flags a command reads.
type ociReads uint8

const (
	// readsStore: --store, the local content store.
	readsStore ociReads = 1 << iota
	// readsStoreTrim: --store-max-bytes, for the commands that add
	// artifacts to the store, and so trim it.
	readsStoreTrim
	// readsModule: --max-module-bytes, for the commands that move modules.
	readsModule
	// readsRegistry: the registry access flags, --timeout and the log
	// flags (the client logs what it resolves and what it cannot keep).
	readsRegistry

	readsAll = readsStore | readsStoreTrim | readsModule | readsRegistry
)

// addOCIFlags registers every OCI flag, but only those in reads show in
// the help. The others are accepted and ignored: scripts (and docs) pass
// one set of registry and store flags to every OCI command, and refusing
// --store to a command that has no use for it would break them for
// nothing.
func addOCIFlags(fs *flag.FlagSet, reads ociReads) *ociFlags {
	f := &ociFlags{reads: reads, hidden: map[string]bool{}}
	groups := []struct {
		r        ociReads
		register func()
	}{
		{readsStore, func() { f.registerStoreDir(fs, "") }},
		{readsStoreTrim, func() { f.registerStoreTrim(fs, "") }},
		{readsModule, func() { f.registerModuleLimit(fs, "") }},
		{readsRegistry, func() {
			f.registerRegistry(fs, "")
			fs.DurationVar(&f.timeout, "timeout", oci.DefaultTimeout, "bound on each HTTP request")
			f.log = addLogFlags(fs)
		}},
	}
	for _, g := range groups {
		before := flagNames(fs)
		g.register()
		if reads&g.r == 0 {
			for name := range flagNames(fs) {
				if !before[name] {
					f.hidden[name] = true
				}
			}
		}
	}
	return f
}

func flagNames(fs *flag.FlagSet) map[string]bool {
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// printFlags is fs.PrintDefaults without the flags in hidden.
func printFlags(fs *flag.FlagSet, hidden map[string]bool) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !hidden[f.Name] {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue // not the value parsed so far
		}
	})
	shown.PrintDefaults()
}

// registerAccess registers the store and registry access flags on fs,
// each help text after prefix: the OCI commands and the commands serving
// image entries share their names and defaults.
func (f *ociFlags) registerAccess(fs *flag.FlagSet, prefix string) {
	f.registerStoreDir(fs, prefix)
	f.registerStoreTrim(fs, prefix)
	f.registerModuleLimit(fs, prefix)
	f.registerRegistry(fs, prefix)
}

func (f *ociFlags) registerStoreDir(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&f.store, "store", defaultStoreDir(), prefix+"the local content store (a directory; shared by processes)")
}

func (f *ociFlags) registerStoreTrim(fs *flag.FlagSet, prefix string) {
	fs.Int64Var(&f.storeBytes, "store-max-bytes", oci.DefaultStoreBytes, prefix+"trim the store to this size, least recently used artifacts first")
}

func (f *ociFlags) registerModuleLimit(fs *flag.FlagSet, prefix string) {
	fs.Int64Var(&f.maxBlob, "max-module-bytes", oci.DefaultMaxBlobSize, prefix+"refuse a module larger than this")
}

func (f *ociFlags) registerRegistry(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&f.dockerConfig, "docker-config", "", prefix+"credentials: a Docker config.json (default $DOCKER_CONFIG/config.json or ~/.docker/config.json)")
	fs.StringVar(&f.caFile, "ca-file", "", prefix+"trust the CA certificates of this PEM file too")
	fs.BoolVar(&f.plainHTTP, "plain-http", false, prefix+"plain HTTP instead of HTTPS; loopback registries only")
	fs.Var(&f.redirectHosts, "allow-redirect-host", prefix+"a host the registry may redirect downloads to (repeatable); others are refused")
}

func defaultStoreDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "wasmprov", "oci")
}

// options are the client options the flags give, but the store: whether
// a store that cannot be opened is fatal is the caller's to say.
func (f *ociFlags) options(logger *slog.Logger, timeout time.Duration) (oci.Options, error) {
	opts := oci.Options{DockerConfig: f.dockerConfig, PlainHTTP: f.plainHTTP, RedirectHosts: f.redirectHosts,
		MaxBlobSize: f.maxBlob, Timeout: timeout, Logger: logger}
	if f.caFile != "" {
		var err error
		if opts.RootCAs, err = oci.LoadCAFile(f.caFile); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

func (f *ociFlags) client() (*oci.Client, error) {
	opts, err := f.commandOptions()
	if err != nil {
		return nil, err
	}
	return oci.New(opts)
}

// commandOptions are the options of an OCI command: its logger, its
// timeout, and a store that must open. The values of flags the command
// does not read are left out, as if not given: a hidden flag must not
// change what a command does.
func (f *ociFlags) commandOptions() (oci.Options, error) {
	read := *f
	if f.reads&readsRegistry == 0 {
		read.dockerConfig, read.caFile, read.plainHTTP, read.redirectHosts, read.timeout = "", "", false, nil, 0
		read.log = &logFlags{level: "warn"}
	}
	if f.reads&readsModule == 0 {
		read.maxBlob = 0
	}
	if f.reads&readsStore == 0 {
		read.store = ""
	}
	if f.reads&readsStoreTrim == 0 {
		read.storeBytes = 0
	}
	logger, err := read.log.logger()
	if err != nil {
		return oci.Options{}, err
	}
	opts, err := read.options(logger, read.timeout)
	if err != nil {
		return opts, err
	}
	if read.store != "" {
		if opts.Store, err = oci.OpenStore(read.store, read.storeBytes); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// parseInterspersed parses flags that may come after the positional
// arguments (wasmprov pull REF -o FILE).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// ociCommand is what every OCI command shares: the registry and store
// flags it reads, an optional -o FILE, positional arguments checked by
// ok, and the client built from the flags.
type ociCommand struct {
	name, usage string
	reads       ociReads
	withOut     bool // takes -o FILE (required; - for stdout)
	ok          func(pos []string) bool
	want        string // what ok expects, for the error
	// refs are the positional arguments that are references, checked for
	// a tag or digest before anything is asked of a registry.
	refs func(pos []string) []string
}

// parse parses args and returns the client, the positional arguments and
// the -o file.
func (c ociCommand) parse(args []string) (*oci.Client, []string, string, error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	f := addOCIFlags(fs, c.reads)
	var out *string
	if c.withOut {
		out = fs.String("o", "", "write to `FILE` (required; - for stdout)")
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), c.usage+"\n\nflags:")
		printFlags(fs, f.hidden)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, "", err
	}
	if !c.ok(pos) || (out != nil && *out == "") {
		fs.Usage()
		return nil, nil, "", fmt.Errorf("want %s", c.want)
	}
	if c.refs != nil {
		for _, ref := range c.refs(pos) {
			if err := needTagOrDigest(ref); err != nil {
				return nil, nil, "", err
			}
		}
	}
	client, err := f.client()
	if err != nil {
		return nil, nil, "", err
	}
	if out != nil {
		return client, pos, *out, nil
	}
	return client, pos, "", nil
}

// needTagOrDigest refuses a reference that names neither a tag nor a
// digest. docker and oras would take :latest; wasmprov does not, because
// what it pulls is code the host runs with the cluster's credentials in
// reach: which version must be said, not whatever was pushed last under
// a tag nobody named — and a provider is rarely pushed as latest, so the
// default would mostly give a confusing "not found".
func needTagOrDigest(ref string) error {
	if strings.Contains(ref, "@") {
		return nil
	}
	slash := strings.LastIndex(ref, "/")
	if slash < 0 || strings.Contains(ref[slash+1:], ":") {
		return nil // a tag, or not a reference at all: the parser says which
	}
	return fmt.Errorf("%s names no version: add :TAG or @sha256:DIGEST (wasmprov assumes no :latest)", ref)
}

func argCount(n int) func([]string) bool { return func(pos []string) bool { return len(pos) == n } }

// allArgs and argAt say which positional arguments are references.
func allArgs(pos []string) []string { return pos }

func argAt(i int) func([]string) []string { return func(pos []string) []string { return pos[i : i+1] } }

var (
	pushCommand = ociCommand{name: "push", reads: readsAll, ok: argCount(2), want: "a module and a reference", refs: argAt(1),
		usage: "usage: wasmprov push PROVIDER.wasm REGISTRY/REPOSITORY:TAG\n\n" +
			"Pushes the module as a Wasm OCI artifact (config application/vnd.wasm.config.v0+json,\n" +
			"one application/wasm layer), its metadata as the manifest's annotations, and\n" +
			"prints the reference pinned to the manifest's digest."}
	pullCommand = ociCommand{name: "pull", reads: readsAll, withOut: true, ok: argCount(1), want: "one reference and -o", refs: allArgs,
		usage: "usage: wasmprov pull REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST] -o FILE\n\n" +
			"Pulls the module, verifying every blob against its digest, and prints the\n" +
			"reference pinned to the manifest's digest. A reference by digest the local store\n" +
			"has is served from it without contacting the registry. With -o - the module\n" +
			"goes to stdout and the reference to stderr."}
	digestCommand = ociCommand{name: "digest", reads: readsRegistry, ok: argCount(1), want: "one reference", refs: allArgs,
		usage: "usage: wasmprov digest REGISTRY/REPOSITORY:TAG\n\n" +
			"Prints the manifest digest the tag names now (pin it: REPOSITORY@DIGEST)."}
	saveCommand = ociCommand{name: "save", reads: readsAll, withOut: true, ok: func(pos []string) bool { return len(pos) > 0 }, want: "references and -o", refs: allArgs,
		usage: "usage: wasmprov save REF... -o BUNDLE.tar\n\n" +
			"Writes the artifacts (pulled, or from the local store) to an OCI image layout\n" +
			"tar that 'wasmprov load' reads on a machine without access to the registry.\n" +
			"With -o - the tar goes to stdout and the references to stderr."}
	loadCommand = ociCommand{name: "load", reads: readsStore | readsStoreTrim | readsModule, ok: argCount(1), want: "one bundle",
		usage: "usage: wasmprov load BUNDLE.tar\n\n" +
			"Verifies the bundle 'wasmprov save' wrote and puts its artifacts into the local\n" +
			"store; it prints each reference pinned to its digest, which 'wasmprov pull'\n" +
			"then serves from the store with no registry. It contacts no registry."}
)

func runPush(ctx context.Context, args []string) error {
	c, pos, _, err := pushCommand.parse(args)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	d, err := c.Push(ctx, wasm, pos[1])
	if err != nil {
		return err
	}
	// stdout stays the one pinned reference scripts read; the labels go to
	// stderr, because the module's sha256 (inspect, annotate, policies) and
	// the manifest digest (pull, pin) are both "sha256:…" and get mixed up.
	fmt.Fprintf(stdout, "%s@%s\n", repoOf(pos[1]), d)
	fmt.Fprintf(stderr, "manifest digest: %s (pull and pin by this)\nmodule sha256:   %s (what inspect, annotate and policies show; not pullable)\n", d, sha256Hex(wasm))
	return nil
}

// repoOf is ref without its tag or digest.
func repoOf(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func runPull(ctx context.Context, args []string) error {
	c, pos, out, err := pullCommand.parse(args)
	if err != nil {
		return err
	}
	a, err := c.Pull(ctx, pos[0])
	if err != nil {
		return err
	}
	if err := writeOutput(out, a.Wasm); err != nil {
		return err
	}
	fmt.Fprintf(resultWriter(out), "%s\n", a.Ref)
	return nil
}

func runDigest(ctx context.Context, args []string) error {
	c, pos, _, err := digestCommand.parse(args)
	if err != nil {
		return err
	}
	d, err := c.Resolve(ctx, pos[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, d)
	return nil
}

func runSave(ctx context.Context, args []string) error {
	c, pos, out, err := saveCommand.parse(args)
	if err != nil {
		return err
	}
	var arts []*oci.Artifact
	if out == stdoutName {
		// Streamed: a failure leaves a truncated tar on stdout, which
		// load refuses, and the exit status says so.
		if arts, err = c.Save(ctx, pos, stdout); err != nil {
			return err
		}
	} else {
		tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		arts, err = c.Save(ctx, pos, tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), out); err != nil {
			return err
		}
	}
	for _, a := range arts {
		fmt.Fprintln(resultWriter(out), a.Ref)
	}
	return nil
}

func runLoad(ctx context.Context, args []string) error {
	c, pos, _, err := loadCommand.parse(args)
	if err != nil {
		return err
	}
	file, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer file.Close()
	loaded, err := c.Load(file)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	for _, l := range loaded {
		name := l.Ref
		if name == "" {
			name = l.Digest.String()
		}
		fmt.Fprintln(stdout, name)
		// stdout stays a list of references; what came with each, for
		// the operator, goes to stderr.
		switch l.Referrers {
		case 0:
			fmt.Fprintf(stderr, "%s: no signature in the bundle (an entry with a verify block will refuse it offline)\n", name)
		case 1:
			fmt.Fprintf(stderr, "%s: 1 signature loaded, for verifying offline\n", name)
		default:
			fmt.Fprintf(stderr, "%s: %d signatures loaded, for verifying offline\n", name, l.Referrers)
		}
	}
	return nil
}
