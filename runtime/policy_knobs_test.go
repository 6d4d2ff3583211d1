package runtime_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"testing"
)

// enforcedOutsideNewEnv are the Policy fields the host functions do not
// enforce, each with the function that does. Every other field is a host
// function's knob and must be copied into its sub-policy by newEnv.
var enforcedOutsideNewEnv = map[string]string{
	"HostAliases":           "Load (aliases resolved once per version, passed to newEnv)",
	"Capabilities":          "grantCustom (custom host functions granted by name)",
	"SHA256":                "Load (the module's digest pin)",
	"MemoryLimitMiB":        "compileDigest (the engine's memory limit)",
	"PoolSize":              "Load (the pool)",
	"Prewarm":               "Load (the pool)",
	"IdleTimeout":           "Load (the pool's reaper)",
	"CallTimeout":           "Provider calls (the call deadline)",
	"LoadTimeout":           "Load and Inspect",
	"MaxTableEntries":       "loadLimits (the precheck)",
	"MaxCallsPerInstance":   "Provider calls (instance recycling)",
	"HTTPRequestsPerSecond": "limiter (pacing.go: the provider name's limiter, shared by its versions, handed to newEnv's HTTP policy)",
	"HTTPBurst":             "limiter (pacing.go)",
}

// TestEveryPolicyKnobIsEnforced guards the one place Policy is copied
// field by field (RATIONALE.md, "Why is Policy flat, and copied into the
// host functions' sub-policies?"): a Policy field is either read by
// newEnv, which hands it to the host functions, or listed above with
// what enforces it. A knob added to Policy and to neither fails here
// instead of being accepted and silently ignored.
func TestEveryPolicyKnobIsEnforced(t *testing.T) {
	fset := token.NewFileSet()
	fields := policyFields(t, fset)
	read := newEnvReads(t, fset)
	for _, f := range fields {
		_, elsewhere := enforcedOutsideNewEnv[f]
		switch {
		case read[f] && elsewhere:
			t.Errorf("Policy.%s is read by newEnv and listed as enforced by %s: keep one", f, enforcedOutsideNewEnv[f])
		case !read[f] && !elsewhere:
			t.Errorf("Policy.%s is neither copied into a host function's sub-policy by newEnv (runtime/load.go) "+
				"nor listed in enforcedOutsideNewEnv with what enforces it: a policy knob that does nothing", f)
		}
	}
	for f := range enforcedOutsideNewEnv {
		if !slices.Contains(fields, f) {
			t.Errorf("enforcedOutsideNewEnv lists %s, which is no field of Policy: remove it", f)
		}
	}
	if len(read) < 8 {
		t.Fatalf("newEnv reads only %d Policy fields (%v): did it move?", len(read), read)
	}
}

// policyFields lists the exported fields of Policy (policy.go).
func policyFields(t *testing.T, fset *token.FileSet) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, "policy.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Policy" {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range fl.Names {
				if name.IsExported() {
					out = append(out, name.Name)
				}
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatal("no Policy struct in policy.go")
	}
	sort.Strings(out)
	return out
}

// newEnvReads returns the fields of its policy parameter that newEnv
// (load.go) reads.
func newEnvReads(t *testing.T, fset *token.FileSet) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(fset, "load.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "newEnv" {
			return true
		}
		found = true
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "policy" {
					read[sel.Sel.Name] = true
				}
			}
			return true
		})
		return false
	})
	if !found {
		t.Fatal("no func newEnv in load.go")
	}
	return read
}
