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
	register("push", "push a provider module to an OCI registry as a Wasm artifact", runPush)
	register("pull", "pull a provider module from an OCI registry (by digest: from the local store when it has it)", runPull)
	register("digest", "print the manifest digest a reference names now", runDigest)
	register("save", "write artifacts to an OCI image layout tar, for an air-gapped install", runSave)
	register("load", "put the artifacts of an OCI image layout tar into the local store", runLoad)
}

// ociFlags are the registry and store flags every OCI command takes.
type ociFlags struct {
	store, dockerConfig, caFile string
	storeBytes, maxBlob         int64
	plainHTTP                   bool
	redirectHosts               listFlag
	timeout                     time.Duration
	log                         *logFlags
}

func addOCIFlags(fs *flag.FlagSet) *ociFlags {
	f := &ociFlags{}
	f.registerAccess(fs, "")
	fs.DurationVar(&f.timeout, "timeout", oci.DefaultTimeout, "bound on each HTTP request")
	f.log = addLogFlags(fs)
	return f
}

// registerAccess registers the store and registry access flags on fs,
// each help text after prefix: the OCI commands and the commands serving
// image entries share their names and defaults.
func (f *ociFlags) registerAccess(fs *flag.FlagSet, prefix string) {
	fs.StringVar(&f.store, "store", defaultStoreDir(), prefix+"the local content store (a directory; shared by processes)")
	fs.Int64Var(&f.storeBytes, "store-max-bytes", oci.DefaultStoreBytes, prefix+"trim the store to this size, least recently used artifacts first")
	fs.Int64Var(&f.maxBlob, "max-module-bytes", oci.DefaultMaxBlobSize, prefix+"refuse a module larger than this")
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
// timeout, and a store that must open.
func (f *ociFlags) commandOptions() (oci.Options, error) {
	logger, err := f.log.logger()
	if err != nil {
		return oci.Options{}, err
	}
	opts, err := f.options(logger, f.timeout)
	if err != nil {
		return opts, err
	}
	if f.store != "" {
		if opts.Store, err = oci.OpenStore(f.store, f.storeBytes); err != nil {
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
// flags, an optional -o FILE, positional arguments checked by ok, and the
// client built from the flags.
type ociCommand struct {
	name, usage string
	withOut     bool // takes -o FILE (required)
	ok          func(pos []string) bool
	want        string // what ok expects, for the error
}

// parse parses args and returns the client, the positional arguments and
// the -o file.
func (c ociCommand) parse(args []string) (*oci.Client, []string, string, error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	f := addOCIFlags(fs)
	var out *string
	if c.withOut {
		out = fs.String("o", "", "write to `FILE` (required)")
	}
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), c.usage+"\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, "", err
	}
	if !c.ok(pos) || (out != nil && *out == "") {
		fs.Usage()
		return nil, nil, "", fmt.Errorf("want %s", c.want)
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

func argCount(n int) func([]string) bool { return func(pos []string) bool { return len(pos) == n } }

var (
	pushCommand = ociCommand{name: "push", ok: argCount(2), want: "a module and a reference",
		usage: "usage: wasmprov push PROVIDER.wasm REGISTRY/REPOSITORY:TAG\n\n" +
			"Pushes the module as a Wasm OCI artifact (config application/vnd.wasm.config.v0+json,\n" +
			"one application/wasm layer), its metadata as the manifest's annotations, and\n" +
			"prints the reference pinned to the manifest's digest."}
	pullCommand = ociCommand{name: "pull", withOut: true, ok: argCount(1), want: "one reference and -o",
		usage: "usage: wasmprov pull REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST] -o FILE\n\n" +
			"Pulls the module, verifying every blob against its digest, and prints the\n" +
			"reference pinned to the manifest's digest. A reference by digest the local store\n" +
			"has is served from it without contacting the registry."}
	digestCommand = ociCommand{name: "digest", ok: argCount(1), want: "one reference",
		usage: "usage: wasmprov digest REGISTRY/REPOSITORY:TAG\n\n" +
			"Prints the manifest digest the tag names now (pin it: REPOSITORY@DIGEST)."}
	saveCommand = ociCommand{name: "save", withOut: true, ok: func(pos []string) bool { return len(pos) > 0 }, want: "references and -o",
		usage: "usage: wasmprov save REF... -o BUNDLE.tar\n\n" +
			"Writes the artifacts (pulled, or from the local store) to an OCI image layout\n" +
			"tar that 'wasmprov load' reads on a machine without access to the registry."}
	loadCommand = ociCommand{name: "load", ok: argCount(1), want: "one bundle",
		usage: "usage: wasmprov load BUNDLE.tar\n\n" +
			"Verifies the bundle 'wasmprov save' wrote and puts its artifacts into the local\n" +
			"store; it prints each reference pinned to its digest, which 'wasmprov pull'\n" +
			"then serves from the store with no registry."}
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
	if err := writeFileAtomic(out, a.Wasm); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", a.Ref)
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
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	arts, err := c.Save(ctx, pos, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	for _, a := range arts {
		fmt.Fprintln(stdout, a.Ref)
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
		if l.Ref != "" {
			fmt.Fprintln(stdout, l.Ref)
		} else {
			fmt.Fprintln(stdout, l.Digest)
		}
	}
	return nil
}
