package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// Size bounds of hand-written Go code: a file a reader can hold in mind
// has one concern, and a function that fits on two screens has one job.
// A file or function over its bound is split by what it does, not by
// line count (ARCHITECTURE.md, "Where a change belongs", names the seams).
const (
	maxFileLines = 450
	maxFuncLines = 120
)

// oversized are the exceptions, each with its reason. The list only
// shrinks: an entry that no longer exceeds its bound fails the test too.
var oversized = map[string]string{
	"apis/cluster/v1alpha1/zz_generated.deepcopy.go": "written by hand in deepcopy-gen's shape, one DeepCopyInto per type; kept in step with the types by deepcopy_test.go, not read as prose",
}

// TestCodeSize checks every non-test, non-generated .go file of the
// repository's modules (test files are tables and scenarios; testdata is
// fixtures) against maxFileLines and every function in it against
// maxFuncLines.
func TestCodeSize(t *testing.T) {
	root := testguest.Root()
	fset := token.NewFileSet()
	type excess struct{ key, detail string } // key: "path" or "path: func Name"
	var over []excess
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if n := fset.Position(f.End()).Line; n > maxFileLines {
			over = append(over, excess{rel, fmt.Sprintf("%d lines (at most %d)", n, maxFileLines)})
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				over = append(over, excess{rel + ": func " + funcName(fd), fmt.Sprintf("%d lines (at most %d)", n, maxFuncLines)})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range over {
		if _, ok := oversized[o.key]; ok {
			seen[o.key] = true
			continue
		}
		t.Errorf("%s: %s: split it by concern (a file per concern, a function per step)", o.key, o.detail)
	}
	var stale []string
	for key := range oversized {
		if !seen[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	for _, key := range stale {
		t.Errorf("oversized lists %q, which is now within its bound: remove the entry", key)
	}
}

// funcName is fd's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if idx, ok := typ.(*ast.IndexListExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
