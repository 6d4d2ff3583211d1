package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

func init() {
	register("annotate", "write a module's metadata section (name, version, source, minimum host version, ...)", runAnnotate)
}

func runAnnotate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("annotate", flag.ContinueOnError)
	var (
		out          = fs.String("o", "", "write the annotated module to `FILE` (required; may be the input; - for stdout)")
		caps         = fs.String("capabilities", "", "comma-separated capability names (default: what the module declares)")
		hosts, env   listFlag
		md           metadata.Metadata
		abiVersion   = fs.Int("abi-version", -1, "the ABI version the module was built for (default: what its wasmprov_abi_version returns)")
		minHost      = fs.String("min-host-version", "", "the oldest wasmprov host the module runs on, a semantic version (e.g. 0.1.0)")
		keepExisting = fs.Bool("merge", true, "start from the module's existing metadata, if any, and change only the fields given (its ABI version and capabilities included: no compile)")
		reread       = fs.Bool("reread", false, "read the ABI version and capabilities from the module's code even if its metadata states them (compiles a module whose exports are not constants)")
	)
	fs.StringVar(&md.Name, "name", "", "the provider's name (required unless the module has metadata)")
	fs.StringVar(&md.Version, "version", "", "the provider's version")
	fs.StringVar(&md.Description, "description", "", "a one-line description")
	fs.StringVar(&md.Source, "source", "", "where the source lives (URL)")
	fs.StringVar(&md.License, "license", "", "an SPDX license expression")
	fs.Var(&hosts, "allowed-host", "a host the suggested policy allows (repeatable)")
	fs.Var(&env, "allowed-env", "an environment variable the suggested policy allows (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov annotate PROVIDER.wasm --name NAME [--version V] [--min-host-version V] ... -o OUT.wasm\n\n"+
			"Writes the module's wasmprov.metadata custom section, replacing an existing one;\n"+
			"every other byte of the module stays as it was. The ABI version and the\n"+
			"capabilities are, unless given, kept from the existing metadata (with -merge,\n"+
			"unless -reread), else read from the module: from constant export bodies, else\n"+
			"by compiling it and calling the exports, which takes seconds for a Go guest.\n"+
			"The host refuses a module whose metadata names another ABI or a newer host\n"+
			"than itself.\n\nflags:")
		fs.PrintDefaults()
	}
	// The module may come before the flags, as in the usage line.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append(append([]string{}, args[1:]...), args[0])
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *out == "" {
		fs.Usage()
		return fmt.Errorf("want one module and -o")
	}
	in := fs.Arg(0)
	wasm, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var result metadata.Metadata
	old, _ := metadata.Read(wasm) // an invalid section is replaced, as if there were none
	if old != nil && *keepExisting {
		result = *old
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&result.Name, md.Name)
	set(&result.Version, md.Version)
	set(&result.Description, md.Description)
	set(&result.Source, md.Source)
	set(&result.License, md.License)
	set(&result.MinHostVersion, *minHost)
	if len(hosts) > 0 || len(env) > 0 {
		result.Policy = &metadata.SuggestedPolicy{AllowedHosts: hosts, AllowedEnv: env}
	}

	// What the module itself says: its ABI version and its declaration.
	// Metadata that states them was written from them (or from the
	// flags) by an earlier annotate of the same code — a custom section
	// does not change the code — so changing a version or a license keeps
	// them rather than compiling the module again.
	needABI, needCaps := *abiVersion < 0, *caps == ""
	if old != nil && *keepExisting && !*reread && (needABI || needCaps) {
		// annotate writes the declaration with the ABI version: an empty
		// list next to a stated version declares nothing.
		stated := old.ABIVersion != 0 || len(old.Capabilities) > 0
		var kept []string
		if needABI && old.ABIVersion != 0 {
			needABI = false
			kept = append(kept, fmt.Sprintf("ABI version %d", old.ABIVersion))
		}
		if needCaps && stated {
			needCaps = false
			kept = append(kept, "capabilities "+capNames(old.Capabilities))
		}
		if len(kept) > 0 {
			fmt.Fprintf(stderr, "%s: keeping the %s its metadata states (-reread reads them from the code)\n", in, strings.Join(kept, " and "))
		}
	}
	if needABI || needCaps {
		info, err := readCodeValues(ctx, in, wasm, needABI, needCaps)
		if err != nil {
			return err
		}
		if needABI && info.ABIVersionKnown {
			result.ABIVersion = int(info.ABIVersion)
		}
		if needCaps && info.DeclaredKnown {
			result.Capabilities = info.Declared.Names()
		}
	}
	if *abiVersion >= 0 {
		result.ABIVersion = *abiVersion
	}
	if *caps != "" {
		result.Capabilities = strings.Split(*caps, ",")
	}
	annotated, err := metadata.Write(wasm, &result)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := writeOutput(*out, annotated); err != nil {
		return err
	}
	fmt.Fprintf(resultWriter(*out), "%s: %s %s, %d bytes, sha256 %s\n", *out, result.Name, result.Version, len(annotated), sha256Hex(annotated))
	return nil
}

// capNames is a metadata capability list as annotate reports it.
func capNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// inspectByRunning compiles wasm and calls its scalar exports. It is a
// variable so that a test can count the compiles: skipping them is what
// makes annotating a Go guest take milliseconds instead of most of a
// minute, and only a counter tells a skipped compile from a fast one.
var inspectByRunning = func(ctx context.Context, rt *runtime.Runtime, wasm []byte) (*runtime.ModuleInfo, error) {
	return rt.Inspect(ctx, wasm, runtime.WithInspectMode(runtime.InspectRun))
}

// readCodeValues reads what wasm's code says of its ABI version and
// capabilities (those wanted): statically first, which reads the values of
// exports whose bodies are constants (a WAT or Rust guest) in
// milliseconds, then, if one is still unknown, by compiling the module and
// calling the exports, which takes seconds for a Go guest and is said on
// stderr so that the wait is not a silent hang.
func readCodeValues(ctx context.Context, in string, wasm []byte, wantABI, wantCaps bool) (*runtime.ModuleInfo, error) {
	rt, err := runtime.New(engineOption())
	if err != nil {
		return nil, err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	info, err := rt.Inspect(ctx, wasm, runtime.WithInspectMode(runtime.InspectStatic))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if (!wantABI || info.ABIVersionKnown) && (!wantCaps || info.DeclaredKnown) {
		return info, nil
	}
	fmt.Fprintf(stderr, "compiling %s to read its ABI version and capabilities (--abi-version and --capabilities skip this)...\n", in)
	start := time.Now()
	info, err = inspectByRunning(ctx, rt, wasm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	fmt.Fprintf(stderr, "compiled and ran %s's exports in %s\n", in, time.Since(start).Round(10*time.Millisecond))
	return info, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory renamed into place: an interrupted run leaves the old file or
// none, never half a module.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
