package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// TestFuzzTargetsAreFound: `make fuzz-smoke` runs the targets
// hack/fuzz-targets.sh prints; it must print every fuzz function of the
// main module (a hand-kept list once missed FuzzDecodeMachine). The
// functions are read with go/parser from every test file outside the
// other modules.
func TestFuzzTargetsAreFound(t *testing.T) {
	root := testguest.Root()
	var want []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || d.Name() == "testdata" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir // another module, fixtures or build output
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") {
				rel, _ := filepath.Rel(root, filepath.Dir(path))
				want = append(want, "./"+filepath.ToSlash(rel)+":"+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "fuzz-targets.sh")).Output()
	if err != nil {
		t.Fatalf("hack/fuzz-targets.sh: %v", err)
	}
	got := strings.Fields(string(out))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("hack/fuzz-targets.sh prints\n%s\nthe test files define\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < 20 {
		t.Errorf("only %d fuzz targets found", len(want))
	}
}
