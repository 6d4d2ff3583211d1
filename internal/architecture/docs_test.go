package architecture_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// The three package tables of docs/ARCHITECTURE.md's "## Packages"
// section, each known by the first word of the line that introduces it,
// and the packages each must hold (tableFor).
const (
	tablePublic   = "Public"
	tablePrograms = "Programs"
	tableInternal = "Internal"
)

// tableFor is the table a package belongs in, by its path alone: a path
// with an element named internal is internal (Go enforces it), one under
// cmd/ or examples/ is a program or an example, any other is public.
func tableFor(p string) string {
	switch {
	case slices.Contains(strings.Split(p, "/"), "internal"):
		return tableInternal
	case strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "examples/"):
		return tablePrograms
	}
	return tablePublic
}

// docEntry is one name in the first column of a package table.
type docEntry struct {
	name  string // a path from the module's root; "x/..." is a group
	table string // tablePublic, tablePrograms or tableInternal
	title string // the table's name, from the line introducing it, for messages
}

// TestArchitectureNamesEveryPackage: docs/ARCHITECTURE.md's package tables
// (section "Packages") name every package of the module and of the
// example modules, each in the table its path puts it in, and nothing
// that is not one: a package added, moved or removed changes the document
// in the same commit. The rule, stated in the document too:
//
//   - In a row's first cell every code span names packages by their path
//     from the module's root. A bare name (no slash) after a path is a
//     sibling of that path (`runtime/internal/engine/wazeroengine`,
//     `wasmtimeengine`); a bare name first in a cell is a top-level
//     package.
//   - A name without "/..." is exactly one package, never its
//     subpackages; "x/..." is x and every package below it, as in
//     go list, and must match at least one.
//   - A path with an internal element goes in the "Internal" table, one
//     under cmd/ or examples/ in "Programs and examples", any other in
//     "Public".
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := testguest.Root()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries := documentedPackages(t, string(doc))

	// The main module's packages with their doc comments' first
	// sentences (the suggested row's job), then the example modules'.
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	synopsis := map[string]string{}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		imp, docText, _ := strings.Cut(line, "\t")
		p := strings.TrimPrefix(imp, mod)
		if p == imp {
			t.Fatalf("go list ./... printed %q, not a package under %s", imp, mod)
		}
		pkgs = append(pkgs, p)
		synopsis[p] = docText
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list ./... printed only %d packages", len(pkgs))
	}
	pkgs = append(pkgs, exampleModulePackages(t, root)...)
	titles := tableTitles(entries)

	// Every package is covered, in the right table.
	for _, p := range pkgs {
		want := tableFor(p)
		covering := coveringEntries(entries, p)
		if len(covering) == 0 {
			job := synopsis[p]
			if job == "" {
				job = "<what it is for, one line>"
			}
			t.Errorf("package %s is in no row of docs/ARCHITECTURE.md's package tables: add a row\n\t| `%s` | %s |\nto the table %q (section \"## Packages\"), or add it to an existing row's first cell",
				p, p, job, titles[want])
			continue
		}
		for _, e := range covering {
			if e.table != want {
				t.Errorf("package %s is named by `%s` in docs/ARCHITECTURE.md's table %q, but its path puts it in %q: move it to that table",
					p, e.name, e.title, titles[want])
			}
		}
	}
	// Every name is a package (or a group with at least one), named once.
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.name] {
			t.Errorf("docs/ARCHITECTURE.md's package tables name `%s` twice: keep one row", e.name)
		}
		seen[e.name] = true
		if group, ok := strings.CutSuffix(e.name, "/..."); ok {
			if !slices.ContainsFunc(pkgs, func(p string) bool { return p == group || strings.HasPrefix(p, group+"/") }) {
				t.Errorf("docs/ARCHITECTURE.md's table %q names `%s`, but there is no package at or under %s: remove it from its row (stale), or correct the path", e.title, e.name, group)
			}
			continue
		}
		if !slices.Contains(pkgs, e.name) {
			hint := ""
			if slices.ContainsFunc(pkgs, func(p string) bool { return strings.HasPrefix(p, e.name+"/") }) {
				hint = fmt.Sprintf(" (%s is a directory of packages: write `%s/...` to name them all)", e.name, e.name)
			}
			t.Errorf("docs/ARCHITECTURE.md's table %q names `%s`, which is no package of the module or of an example module%s: remove it from its row (stale), or correct the path",
				e.title, e.name, hint)
		}
	}
}

// coveringEntries lists the entries that name p: p itself, or a group
// x/... with p equal to x or below it.
func coveringEntries(entries []docEntry, p string) []docEntry {
	var out []docEntry
	for _, e := range entries {
		if e.name == p {
			out = append(out, e)
			continue
		}
		if group, ok := strings.CutSuffix(e.name, "/..."); ok && (p == group || strings.HasPrefix(p, group+"/")) {
			out = append(out, e)
		}
	}
	return out
}

// tableTitles maps each table to its name in the document, for messages;
// a table the document lacks keeps its key.
func tableTitles(entries []docEntry) map[string]string {
	titles := map[string]string{tablePublic: tablePublic, tablePrograms: tablePrograms, tableInternal: tableInternal}
	for _, e := range entries {
		titles[e.table] = e.title
	}
	return titles
}

// exampleModulePackages lists the package directories of the modules
// beside the main one that are documented with it: the example modules
// (examples/*/go.mod, code an embedder would write) and the host's own
// (hostModules: the controllers, the CLI, Sigstore signing). They are read
// from the tree, not with go list, which would need each module's
// dependencies.
func exampleModulePackages(t *testing.T, root string) []string {
	t.Helper()
	mods, err := filepath.Glob(filepath.Join(root, "examples", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("no examples/*/go.mod: the example modules moved; update exampleModulePackages")
	}
	for _, m := range hostModules {
		mods = append(mods, filepath.Join(root, m, "go.mod"))
	}
	var pkgs []string
	for _, m := range mods {
		err := filepath.WalkDir(filepath.Dir(m), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir // as the go command skips them
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != filepath.Dir(m) {
				return filepath.SkipDir // a module of its own
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
	sort.Strings(pkgs)
	return pkgs
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// documentedPackages reads the first column of every row of the package
// tables in the "## Packages" section, each with the table it is in.
func documentedPackages(t *testing.T, doc string) []docEntry {
	t.Helper()
	start := strings.Index(doc, "\n## Packages\n")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no \"## Packages\" section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var entries []docEntry
	var intro, title, table string
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case !strings.HasPrefix(line, "|"):
			intro = strings.TrimSpace(line)
			continue
		case strings.HasPrefix(line, "| package |"):
			title, _, _ = strings.Cut(intro, " (") // "Programs and examples (not imported …):"
			title = strings.TrimSuffix(title, ":")
			first, _, _ := strings.Cut(title, " ")
			switch table = strings.TrimRight(first, ":"); table {
			case tablePublic, tablePrograms, tableInternal:
			default:
				t.Fatalf("docs/ARCHITECTURE.md: the package table after %q is not one of the three (its introducing line must start with %q, %q or %q)",
					intro, tablePublic, tablePrograms, tableInternal)
			}
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		if table == "" {
			t.Fatalf("docs/ARCHITECTURE.md: row %q is in no package table", line)
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
			entries = append(entries, docEntry{name: name, table: table, title: title})
		}
	}
	for _, want := range []string{tablePublic, tablePrograms, tableInternal} {
		if !slices.ContainsFunc(entries, func(e docEntry) bool { return e.table == want }) {
			t.Errorf("docs/ARCHITECTURE.md's \"## Packages\" section has no %q table with rows", want)
		}
	}
	return entries
}
