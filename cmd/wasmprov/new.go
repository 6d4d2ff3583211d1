package main

import (
	"bufio"
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
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
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
	climod, err := os.ReadFile(filepath.Join(cliDir, "go.mod"))
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
	// go.mod: wasmprov's modules from the checkout, and the command's
	// requirements, so the project builds offline from the same module
	// cache with no `go mod tidy`; go.sum is the command's.
	var mod bytes.Buffer
	fmt.Fprintf(&mod, "module %s\n\ngo %s\n\nrequire (\n\t%s v0.0.0-00010101000000-000000000000\n\t%s v0.0.0-00010101000000-000000000000\n)\n\n",
		*module, goVersion(gomod), wasmprovModule, wasmprovModule+"/cmd/wasmprov")
	var reqs []string
	for _, r := range requirements(climod) {
		if !strings.HasPrefix(r, wasmprovModule) {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) > 0 {
		mod.WriteString("require (\n")
		for _, r := range reqs {
			fmt.Fprintf(&mod, "\t%s // indirect\n", r)
		}
		mod.WriteString(")\n\n")
	}
	// The CLI as a tool of the project (`go tool wasmprov`, the Makefile's
	// conformance target): a tool directive keeps its requirements through
	// `go mod tidy`, which drops a requirement nothing imports.
	fmt.Fprintf(&mod, "tool %s\n\n", wasmprovModule+"/cmd/wasmprov")
	mod.WriteString("replace (\n")
	fmt.Fprintf(&mod, "\t%s => %s\n\t%s => %s\n", wasmprovModule, root, wasmprovModule+"/cmd/wasmprov", cliDir)
	for _, r := range localReplaces(climod) {
		if r[0] != wasmprovModule {
			fmt.Fprintf(&mod, "\t%s => %s\n", r[0], filepath.Join(cliDir, r[1]))
		}
	}
	mod.WriteString(")\n")
	if err := writeNew(filepath.Join(dir, "go.mod"), mod.Bytes()); err != nil {
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

func findWasmprov(dir string) string {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == wasmprovModule {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1]
		}
	}
	return ""
}

func goVersion(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
			return f[1]
		}
	}
	return "1.26.0"
}

// localReplaces returns the [path, dir] pairs of the replace directives of
// a go.mod that name a directory (the modules beside the main one).
func localReplaces(gomod []byte) [][2]string {
	var out [][2]string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "replace (":
			in = true
			continue
		case in && line == ")":
			in = false
			continue
		case strings.HasPrefix(line, "replace "):
			line = strings.TrimPrefix(line, "replace ")
		case !in:
			continue
		}
		if f := strings.Fields(line); len(f) == 3 && f[1] == "=>" && strings.HasPrefix(f[2], ".") {
			out = append(out, [2]string{f[0], f[2]})
		}
	}
	return out
}

// requirements returns "path version" for every requirement of a go.mod.
func requirements(gomod []byte) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "require (":
			in = true
		case in && line == ")":
			in = false
		case in && line != "":
			if f := strings.Fields(line); len(f) == 2 {
				out = append(out, f[0]+" "+f[1])
			}
		case strings.HasPrefix(line, "require "):
			if f := strings.Fields(line); len(f) == 3 {
				out = append(out, f[1]+" "+f[2])
			}
		}
	}
	return out
}
