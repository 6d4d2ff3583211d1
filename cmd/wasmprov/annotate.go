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

	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

func init() {
	register("annotate", "write a module's metadata section (name, version, source, minimum host version, ...)", runAnnotate)
}

func runAnnotate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("annotate", flag.ContinueOnError)
	var (
		out          = fs.String("o", "", "write the annotated module to `FILE` (required; may be the input)")
		caps         = fs.String("capabilities", "", "comma-separated capability names (default: what the module declares)")
		hosts, env   listFlag
		md           metadata.Metadata
		abiVersion   = fs.Int("abi-version", -1, "the ABI version the module was built for (default: what its wasmprov_abi_version returns)")
		minHost      = fs.String("min-host-version", "", "the oldest wasmprov host the module runs on, a semantic version (e.g. 0.1.0)")
		keepExisting = fs.Bool("merge", true, "start from the module's existing metadata, if any, and change only the fields given")
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
			"capabilities are read from the module unless given. The host refuses a module\n"+
			"whose metadata names another ABI or a newer host than itself.\n\nflags:")
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
	if old, err := metadata.Read(wasm); err == nil && old != nil && *keepExisting {
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
	if *abiVersion < 0 || *caps == "" {
		rt, err := runtime.New(engineOption())
		if err != nil {
			return err
		}
		defer rt.Close(context.WithoutCancel(ctx))
		info, err := rt.Inspect(ctx, wasm)
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if *abiVersion < 0 && info.ABIVersionKnown {
			result.ABIVersion = int(info.ABIVersion)
		}
		if *caps == "" && info.DeclaredKnown {
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
	if err := writeFileAtomic(*out, annotated); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s %s, %d bytes, sha256 %s\n", *out, result.Name, result.Version, len(annotated), sha256Hex(annotated))
	return nil
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
