package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"golang.org/x/mod/modfile"
)

func init() {
	register("new", "scaffold a Go guest provider project that passes conformance", runNew)
}

//go:embed templates/new
var newTemplates embed.FS

const wasmprovModule = "github.com/wasmprov/wasmprov"

var providerName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// newFiles maps template names to the files they become.
var newFiles = map[string]string{
	"main.go.tmpl":             "main.go",
	"conformance_test.go.tmpl": "conformance_test.go",
	"spec.json.tmpl":           "spec.json",
	"cassette.json.tmpl":       "testdata/cloud.cassette.json",
	"Makefile.tmpl":            "Makefile",
	"gitignore.tmpl":           ".gitignore",
}

func runNew(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("new", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: wasmprov new [flags] DIR\n\n"+
			"Creates a Go guest provider project in DIR (named after DIR's base name):\n"+
			"a provider skeleton with a TODO per method, a Makefile, spec.json, and a test\n"+
			"that runs the conformance suite against a cassette. It builds and passes\n"+
			"conformance as generated. See docs/AUTHORING.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	module := fs.String("module", "", "Go module path of the new project (default: the provider name)")
	wasmprovDir := fs.String("wasmprov", "", "a wasmprov checkout to build against (default: found from the current directory upwards)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("expected one DIR")
	}
	dir := fs.Arg(0)
	name := filepath.Base(filepath.Clean(dir))
	if !providerName.MatchString(name) {
		return fmt.Errorf("provider name %q (from DIR) must be lowercase letters, digits and dashes, starting with a letter", name)
	}
	if *module == "" {
		*module = name
	}
	root := *wasmprovDir
	if root == "" {
		wd, _ := os.Getwd()
		root = findWasmprov(wd)
		if root == "" {
			return errors.New("no wasmprov checkout found from the current directory upwards: pass --wasmprov DIR")
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	gomod, err := readGoMod(root)
	if err != nil {
		return fmt.Errorf("--wasmprov: %w", err)
	}
	if modulePath(gomod) != wasmprovModule {
		return fmt.Errorf("%s is not a wasmprov checkout (module %q)", root, modulePath(gomod))
	}
	// The project's `make conformance` runs this command from the
	// checkout, so its go.mod and go.sum are this command's module's, a
	// superset of the main module's.
	cliDir := filepath.Join(root, "cmd", "wasmprov")
	climod, err := readGoMod(cliDir)
	if err != nil {
		return fmt.Errorf("--wasmprov: %w", err)
	}
	gosum, err := os.ReadFile(filepath.Join(cliDir, "go.sum"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s already exists", dir)
	}
	data := struct{ Name, Module string }{name, *module}
	for tmpl, out := range newFiles {
		src, err := newTemplates.ReadFile("templates/new/" + tmpl)
		if err != nil {
			return err
		}
		t, err := template.New(tmpl).Parse(string(src))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return err
		}
		if err := writeNew(filepath.Join(dir, out), b.Bytes()); err != nil {
			return err
		}
	}
	mod, err := projectGoMod(*module, gomod, climod, root, cliDir)
	if err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, "go.mod"), mod); err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, "go.sum"), gosum); err != nil {
		return err
	}
	fmt.Printf("created provider %q in %s\n\nnext:\n  cd %s\n  make build        # -> %s.wasm\n  make test         # the conformance suite, offline\n", name, dir, dir, name)
	return nil
}

func writeNew(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// projectGoMod writes the new project's go.mod: wasmprov's modules from
// the checkout at root, and the command's requirements (climod, of the
// module in cliDir), so the project builds offline from the same module
// cache with no `go mod tidy` (its go.sum is the command's).
func projectGoMod(module string, gomod, climod *modfile.File, root, cliDir string) ([]byte, error) {
	const zero = "v0.0.0-00010101000000-000000000000"
	cli := wasmprovModule + "/cmd/wasmprov"
	f := new(modfile.File)
	if err := f.AddModuleStmt(module); err != nil {
		return nil, err
	}
	goVersion := "1.26.0"
	if gomod.Go != nil {
		goVersion = gomod.Go.Version
	}
	if err := f.AddGoStmt(goVersion); err != nil {
		return nil, err
	}
	f.AddNewRequire(wasmprovModule, zero, false)
	f.AddNewRequire(cli, zero, false)
	for _, r := range climod.Require {
		if !strings.HasPrefix(r.Mod.Path, wasmprovModule) {
			f.AddNewRequire(r.Mod.Path, r.Mod.Version, true)
		}
	}
	// The CLI as a tool of the project (`go tool wasmprov`, the Makefile's
	// conformance target): a tool directive keeps its requirements through
	// `go mod tidy`, which drops a requirement nothing imports.
	if err := f.AddTool(cli); err != nil {
		return nil, err
	}
	replaces := [][2]string{{wasmprovModule, root}, {cli, cliDir}}
	// The modules beside the main one that the command replaces with
	// their directories (controller, runtime/signature).
	for _, r := range climod.Replace {
		if r.Old.Path != wasmprovModule && modfile.IsDirectoryPath(r.New.Path) {
			replaces = append(replaces, [2]string{r.Old.Path, filepath.Join(cliDir, r.New.Path)})
		}
	}
	for _, r := range replaces {
		if err := f.AddReplace(r[0], "", r[1], ""); err != nil {
			return nil, err
		}
	}
	f.SetRequireSeparateIndirect(f.Require)
	f.Cleanup()
	return modfile.Format(f.Syntax), nil
}

// readGoMod parses the go.mod in dir.
func readGoMod(dir string) (*modfile.File, error) {
	file := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// Parse, not ParseLax: the command's replace directives are read.
	return modfile.Parse(file, b, nil)
}

func findWasmprov(dir string) string {
	for {
		if f, err := readGoMod(dir); err == nil && modulePath(f) == wasmprovModule {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func modulePath(f *modfile.File) string {
	if f.Module == nil {
		return ""
	}
	return f.Module.Mod.Path
}
