package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// WithHostFunctions gives the runtime's providers the embedder's host
// functions beside wasmprov_v1 (package hostfuncs; abi/SPEC.md §6.5). A
// module importing one loads only under a policy whose Capabilities name
// the function's Capability. New refuses a Function that does not pass
// Validate, and two with the same module and name. Repeated options add
// up.
func WithHostFunctions(fns ...hostfuncs.Function) Option {
	return func(c *config) { c.hostFunctions = append(c.hostFunctions, fns...) }
}

// hostTable is every host function a module may import.
type hostTable struct {
	// fns is what engines bind (hostmodule.Table).
	fns []hostmodule.Function
	// sigs are their signatures by module and name.
	sigs map[[2]string][2][]engine.ValueType
	// custom are the embedder's functions by module and name; modules
	// names their import modules.
	custom  map[[2]string]hostfuncs.Function
	modules map[string]bool
}

func newHostTable(custom []hostfuncs.Function) (hostTable, error) {
	t := hostTable{custom: map[[2]string]hostfuncs.Function{}, modules: map[string]bool{}}
	var errs []error
	for _, f := range custom {
		if err := f.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		key := [2]string{f.Module, f.Name}
		if _, dup := t.custom[key]; dup {
			errs = append(errs, fmt.Errorf("host function %s.%s is given twice", f.Module, f.Name))
			continue
		}
		t.custom[key] = f
		t.modules[f.Module] = true
	}
	if len(errs) > 0 {
		return hostTable{}, fmt.Errorf("WithHostFunctions: %w", errors.Join(errs...))
	}
	t.fns = hostmodule.Table(custom)
	t.sigs = hostmodule.Signatures(t.fns)
	return t, nil
}

// defines reports whether some custom function needs capability name.
func (t hostTable) defines(name string) bool {
	for _, f := range t.custom {
		if f.Capability == name {
			return true
		}
	}
	return false
}

// capabilities lists the custom capabilities, sorted.
func (t hostTable) capabilities() []string {
	var names []string
	for _, f := range t.custom {
		if !slices.Contains(names, f.Capability) {
			names = append(names, f.Capability)
		}
	}
	slices.Sort(names)
	return names
}

// customImports returns the custom functions m imports, sorted by module
// and name; imports the table does not define are validate's to report.
func (t hostTable) customImports(m engine.Module) []hostfuncs.Function {
	var out []hostfuncs.Function
	for _, im := range m.ImportedFunctions() {
		if f, ok := t.custom[[2]string{im.Module, im.Name}]; ok {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b hostfuncs.Function) int {
		return strings.Compare(a.Module+"."+a.Name, b.Module+"."+b.Name)
	})
	return out
}

// grantCustom returns the custom capabilities policy grants a module
// importing imports, or an error naming each import whose capability the
// policy does not grant and the line to add. A policy without
// Capabilities grants no custom capability: what an embedder's function
// reaches is granted by name only.
func grantCustom(policy Policy, imports []hostfuncs.Function) (map[string]bool, error) {
	granted := map[string]bool{}
	var missing []string
	for _, f := range imports {
		if slices.Contains(policy.Capabilities, f.Capability) {
			granted[f.Capability] = true
			continue
		}
		missing = append(missing, fmt.Sprintf("imports %s.%s, which needs capability %q: add it to the policy's capabilities", f.Module, f.Name, f.Capability))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: the policy does not grant what the module's host functions need:\n  - %s", ErrInvalidModule, strings.Join(slices.Compact(missing), "\n  - "))
	}
	return granted, nil
}

// checkCapabilityNames refuses a policy naming a capability that is
// neither built in nor needed by one of the runtime's custom functions:
// a typo would otherwise grant nothing, silently.
func (t hostTable) checkCapabilityNames(p Policy) error {
	for _, name := range p.Capabilities {
		if _, ok := abi.ParseCapability(name); ok {
			continue
		}
		if hostfuncs.CheckCapabilityName(name) == nil && t.defines(name) {
			continue
		}
		known := strings.Join(abi.AllCapabilities.Names(), ", ")
		if c := t.capabilities(); len(c) > 0 {
			known += "; custom: " + strings.Join(c, ", ")
		}
		return fmt.Errorf("policy names unknown capability %q (this host has: %s)", name, known)
	}
	return nil
}
