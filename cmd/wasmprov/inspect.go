package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

func init() {
	register("inspect", "describe a provider module: ABI version, exports, imports, capabilities, digest", runInspect)
}

func runInspect(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables); the one call and serve use, so a module inspected once starts fast everywhere")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov inspect PROVIDER.wasm\n\n"+
			"Describes the module: size, digest, ABI version, declared capabilities, exports\n"+
			"and imports, and every problem that would make the host refuse it (exit status 1\n"+
			"if there is one). What can be read is shown even for an invalid module.")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want one module")
	}
	wasm, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	opts := []runtime.Option{engineOption()}
	if *cacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(*cacheDir))
	}
	rt, err := runtime.New(opts...)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	info, err := rt.Inspect(ctx, wasm)
	if err != nil {
		return err
	}
	w := stdout
	fmt.Fprintf(w, "module:        %s\n", fs.Arg(0))
	fmt.Fprintf(w, "size:          %d bytes\n", info.Size)
	fmt.Fprintf(w, "sha256:        %s\n", info.SHA256)
	version, caps := "unknown (could not be read)", "unknown (could not be read)"
	if info.ABIVersionKnown {
		version = fmt.Sprint(info.ABIVersion)
	}
	if info.DeclaredKnown {
		caps = declaredList(info.Declared)
	}
	fmt.Fprintf(w, "abi version:   %s (host implements %d)\n", version, abi.Version)
	fmt.Fprintf(w, "capabilities:  %s\n", caps)
	printMetadata(w, info.Metadata)
	fmt.Fprintf(w, "exports:\n")
	for _, e := range info.Exports {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "imports:\n")
	for _, i := range info.Imports {
		fmt.Fprintf(w, "  %s\n", i)
	}
	if len(info.Problems) > 0 {
		fmt.Fprintf(w, "problems:\n")
		for _, p := range info.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
		return fmt.Errorf("module is not a valid ABI v%d provider", abi.Version)
	}
	fmt.Fprintf(w, "valid:         yes\n")
	return nil
}

func capList(c abi.Capability) string {
	if c == 0 {
		return "(none)"
	}
	return strings.Join(c.Names(), ", ")
}

// declaredList is capList that also shows the bits this host does not know.
func declaredList(c abi.Capability) string {
	unknown := c &^ abi.AllCapabilities
	list := capList(c & abi.AllCapabilities)
	if unknown == 0 {
		return list
	}
	if c&abi.AllCapabilities == 0 {
		return fmt.Sprintf("unknown bits %#x", uint64(unknown))
	}
	return fmt.Sprintf("%s, unknown bits %#x", list, uint64(unknown))
}

// printMetadata shows the module's wasmprov.metadata section.
func printMetadata(w io.Writer, md *metadata.Metadata) {
	if md == nil {
		fmt.Fprintf(w, "metadata:      (none)\n")
		return
	}
	fmt.Fprintf(w, "metadata:\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-17s %s\n", k+":", v)
		}
	}
	row("name", md.Name)
	row("version", md.Version)
	row("description", md.Description)
	row("source", md.Source)
	row("license", md.License)
	if md.ABIVersion != 0 {
		row("abi version", fmt.Sprint(md.ABIVersion))
	}
	if md.MinHostVersion != "" {
		row("min host version", fmt.Sprintf("%s (this host is %s)", md.MinHostVersion, runtime.Version))
	}
	row("capabilities", strings.Join(md.Capabilities, ", "))
	if md.Policy != nil {
		row("suggested hosts", strings.Join(md.Policy.AllowedHosts, ", "))
		row("suggested env", strings.Join(md.Policy.AllowedEnv, ", "))
	}
}
