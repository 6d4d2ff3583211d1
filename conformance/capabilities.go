package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
)

func checkModule(t *T) error {
	if err := t.env.loadErr; err != nil {
		return failf("the host refused the module: %v", err)
	}
	t.notef("ABI version %d, declares %v", abi.Version, t.env.prov.Declared().Names())
	return nil
}

// importOf maps a capability to the imports it grants (http: either
// framing of a request).
var importOf = map[abi.Capability][]string{
	abi.CapLog: {abi.ImportLog}, abi.CapHTTP: {abi.ImportHTTP, abi.ImportHTTPBin}, abi.CapMachineUpdate: {abi.ImportMachineUpdate},
	abi.CapPVList: {abi.ImportPVList}, abi.CapConfigVar: {abi.ImportConfigVar},
}

// checkCapabilities fails a provider that called host functions it did not
// declare (SPEC §7: such a call returns NOT_DECLARED).
func checkCapabilities(t *T) error {
	var problems []string
	for _, d := range t.env.denied.list() {
		problems = append(problems, "called "+d+" without declaring its capability: the call failed with NOT_DECLARED")
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// checkUnusedCapabilities warns about declarations the module cannot use:
// a capability that reaches outside the sandbox whose host function is not
// even imported.
func checkUnusedCapabilities(t *T) error {
	imports, err := moduleImports(t.env.wasm)
	if err != nil {
		return failf("cannot read the module's imports: %v", err)
	}
	imported := map[string]bool{}
	for _, im := range imports {
		if im[0] == abi.ModuleName {
			imported[im[1]] = true
		}
	}
	declared := t.env.prov.Declared()
	var problems []string
	for _, c := range []abi.Capability{abi.CapLog, abi.CapHTTP, abi.CapMachineUpdate, abi.CapPVList, abi.CapConfigVar} {
		names := importOf[c]
		name := strings.Join(names, " or "+abi.ModuleName+".")
		uses := slices.ContainsFunc(names, func(n string) bool { return imported[n] })
		switch {
		case declared.Has(c) && !uses && c == abi.CapLog:
			// The Go SDK always declares log; it reaches nothing outside
			// the sandbox, so an unused declaration is only noted.
			t.notef("declares \"log\" but never logs")
		case declared.Has(c) && !uses:
			problems = append(problems, fmt.Sprintf("declares %q (capabilities 0x%x) but does not import %s.%s, so it can never use it: drop the declaration",
				c.Names()[0], uint64(declared), abi.ModuleName, name))
		case !declared.Has(c) && uses:
			t.notef("imports %s without declaring %q (harmless unless it calls it; SDKs often link every import)", name, c.Names()[0])
		}
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "\n"))
	}
	return nil
}
