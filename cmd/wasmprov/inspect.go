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
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables); the one call and serve use. -run keeps the module's ABI version and capabilities there, for later static inspects of the same bytes")
	run := fs.Bool("run", false, "compile the module and run its exports (_initialize, wasmprov_abi_version, wasmprov_capabilities) with no capability granted, under the load deadline: validates the code and reads values a static inspect cannot")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov inspect [-run] PROVIDER.wasm\n\n"+
			"Describes the module: size, digest, ABI version, declared capabilities, exports\n"+
			"and imports, and every problem that would make the host refuse it (exit status 1\n"+
			"if there is one). What can be read is shown even for an invalid module.\n\n"+
			"By default the module is read statically: nothing is compiled, none of its code\n"+
			"runs, function bodies are not validated. The ABI version and capabilities are\n"+
			"then known only if the exports return constants, or if an earlier -run of the\n"+
			"same bytes (same sha256) left them in the cache; each is shown with its source.\n"+
			"-run compiles and instantiates the module and calls the exports.")
		fs.PrintDefaults()
	}
	// Flags before and after the module, as call takes them: `inspect
	// m.wasm -run` must not read -run as a second module.
	var pos []string
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if args = fs.Args(); len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	if len(pos) != 1 {
		fs.SetOutput(stderr) // parseFlags did not run without arguments
		fs.Usage()
		return fmt.Errorf("want one module")
	}
	path := pos[0]
	wasm, err := os.ReadFile(path)
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
	mode := runtime.InspectStatic
	if *run {
		mode = runtime.InspectRun
	}
	info, err := rt.Inspect(ctx, wasm, runtime.WithInspectMode(mode))
	if err != nil {
		return err
	}
	w := stdout
	fmt.Fprintf(w, "module:        %s\n", path)
	fmt.Fprintf(w, "size:          %d bytes\n", info.Size)
	// Two sha256 digests name a pushed module: this one, of the file, and
	// the OCI manifest's, the only one a registry pulls by. Say which.
	fmt.Fprintf(w, "sha256:        %s (the module file's; not the OCI manifest digest to pull by, which `wasmprov push` prints)\n", info.SHA256)
	if info.Mode == runtime.InspectStatic {
		fmt.Fprintf(w, "inspected:     statically: nothing compiled, no guest code run, function bodies not validated (-run compiles and runs)\n")
	} else {
		fmt.Fprintf(w, "inspected:     compiled and run (-run): _initialize and the scalar exports called, no capability granted\n")
	}
	var mdVersion, mdCaps string
	if md := info.Metadata; md != nil {
		if md.ABIVersion != 0 {
			mdVersion = fmt.Sprint(md.ABIVersion)
		}
		mdCaps = strings.Join(md.Capabilities, ", ")
	}
	fmt.Fprintf(w, "abi version:   %s\n", valueLine(info, info.ABIVersionKnown, info.ABIVersionFrom,
		fmt.Sprintf("%d (host implements %d)", info.ABIVersion, abi.Version), abi.ExportABIVersion, mdVersion))
	fmt.Fprintf(w, "capabilities:  %s\n", valueLine(info, info.DeclaredKnown, info.DeclaredFrom,
		declaredList(info.Declared), abi.ExportCapabilities, mdCaps))
	if len(info.CustomCapabilities) > 0 {
		fmt.Fprintf(w, "custom capabilities: %s (the policy must grant them)\n", strings.Join(info.CustomCapabilities, ", "))
	}
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
	if !info.CodeValidated {
		fmt.Fprintf(w, "valid:         yes, as far as read without compiling (function bodies not validated: -run compiles them)\n")
		return nil
	}
	fmt.Fprintf(w, "valid:         yes\n")
	return nil
}

// valueLine is the ABI version or capability line: the value and where it
// was read (an export's constant body, a call of the export, the cached
// result of an earlier call), or why it is unknown and what the metadata
// declares instead, labelled as a declaration: the module's code may say
// otherwise, and the code is what the host believes.
func valueLine(info *runtime.ModuleInfo, known bool, from runtime.ValueSource, value, export, declared string) string {
	if known {
		switch from {
		case runtime.FromConstant:
			return fmt.Sprintf("%s [from %s's constant body]", value, export)
		case runtime.FromExportCall:
			return fmt.Sprintf("%s [from a call of %s]", value, export)
		case runtime.FromCache:
			return fmt.Sprintf("%s [from the cache: an earlier -run called %s on these bytes]", value, export)
		}
		return value
	}
	why := "unknown (could not be read)"
	if info.Mode == runtime.InspectStatic {
		why = "unknown without running the module (-run calls " + export + ")"
	}
	if declared != "" {
		why += "; the metadata declares " + declared + " (not read from the code)"
	}
	return why
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
