// Command gen writes the CRDs controller/crd generates from Go types
// (`make crds`): run from the repository's root.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/wasmprov/wasmprov/controller/crd"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := crd.Infrastructure(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd gen:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(root, "controller", "crd", n)
		if err := os.WriteFile(path, files[n], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "crd gen:", err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}
