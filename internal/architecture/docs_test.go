package architecture_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// TestArchitectureNamesEveryPackage: docs/ARCHITECTURE.md's package tables
// (section "Packages") name every package of the module, and nothing that
// is not one: a package added, moved or removed changes the document in
// the same commit. In a cell, a name with a slash is a path from the
// module's root; a bare name after it is a sibling of the path before it
// (`runtime/internal/engine/wazeroengine`, `wasmtimeengine`), and a bare
// name first in a cell is a top-level package.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := testguest.Root()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := documentedPackages(t, string(doc))

	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(mod, "/")), "/"))
	}
	pkgs = append(pkgs, exampleModulePackages(t, root)...)
	for _, p := range pkgs {
		if !documented(named, p) {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's package tables", p)
		}
	}
	for n := range named {
		n = strings.TrimSuffix(n, "/...")
		if !slices.ContainsFunc(pkgs, func(p string) bool { return p == n || strings.HasPrefix(p, n+"/") }) {
			t.Errorf("docs/ARCHITECTURE.md names %s, which is no package of the module", n)
		}
	}
}

// exampleModulePackages lists the package directories of the example
// modules (examples/*/go.mod): code an embedder would write, documented
// with the module's own packages. They are read from the tree, not with
// go list, which would download each module's dependencies.
func exampleModulePackages(t *testing.T, root string) []string {
	t.Helper()
	mods, err := filepath.Glob(filepath.Join(root, "examples", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, m := range mods {
		err := filepath.WalkDir(filepath.Dir(m), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			gos, _ := filepath.Glob(filepath.Join(p, "*.go"))
			if slices.ContainsFunc(gos, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
				rel, _ := filepath.Rel(root, p)
				pkgs = append(pkgs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

// documented reports whether p is named, or is or sits under a name the
// tables give with "/..." (a group of examples or fixtures).
func documented(named map[string]bool, p string) bool {
	if named[p] {
		return true
	}
	for q := p; q != "." && q != ""; q = path.Dir(q) { // x/... is x and below, as in go list
		if named[q+"/..."] {
			return true
		}
	}
	return false
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// documentedPackages reads the first column of every table row in the
// "## Packages" section.
func documentedPackages(t *testing.T, doc string) map[string]bool {
	start := strings.Index(doc, "\n## Packages")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no \"## Packages\" section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		parent := ""
		for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			switch base := strings.TrimSuffix(name, "/..."); {
			case strings.Contains(base, "/"):
				parent = path.Dir(base)
			case parent != "":
				name = parent + "/" + name
			}
			named[name] = true
		}
	}
	return named
}
