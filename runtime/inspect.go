package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/wasmprov/wasmprov/abi"
)

// ModuleInfo describes a provider module without loading it as a provider:
// what `wasmprov inspect` prints and what an installer should look at
// before granting a policy.
type ModuleInfo struct {
	Size   int
	SHA256 string
	// ABIVersion is what the module's wasmprov_abi_version returns (0 when
	// it could not be called).
	ABIVersion int32
	// Declared is the module's capability declaration.
	Declared abi.Capability
	Exports  []string
	Imports  []string
	// Problems lists every reason the module would be refused; empty for a
	// valid module.
	Problems []string
}

// Inspect compiles wasm, lists its exports and imports, validates it against
// the ABI and, if it can be instantiated, reads its ABI version and
// capability declaration. A malformed module is an error; an invalid but
// well-formed one is described, with Problems set. A module over the
// host's load limits is an error wrapping ErrInvalidModule. ctx bounds the
// compile and the guest code Inspect runs, as does the default policy's
// LoadTimeout: inspecting is what one does to a module not yet trusted.
func (r *Runtime) Inspect(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	policy := r.cfg.defaultPolicy.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(policy.LoadTimeout))
	defer cancel()
	info := &ModuleInfo{Size: len(wasm), SHA256: digest(wasm)}
	mod, err := r.compile(ctx, wasm, policy)
	if err != nil {
		return nil, err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	exports := mod.ExportedFunctions()
	for _, name := range sortedKeys(exports) {
		info.Exports = append(info.Exports, fmt.Sprintf("%s %s", name, sigString(exports[name])))
	}
	for _, name := range mod.ExportedMemories() {
		info.Exports = append(info.Exports, name+" (memory)")
	}
	for _, def := range mod.ImportedFunctions() {
		info.Imports = append(info.Imports, fmt.Sprintf("%s.%s %s", def.Module, def.Name, sigString(def.Signature)))
	}
	if info.Problems = validate(mod); len(info.Problems) > 0 {
		return info, nil
	}
	ei, err := mod.Instantiate(ctx, moduleConfig(0))
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %v", err))
		return info, nil
	}
	inst := &guestInstance{inst: ei}
	defer inst.Close(context.WithoutCancel(ctx))
	if init := ei.Function(abi.ExportInitialize); init != nil { // moduleConfig leaves it to the caller
		if err := inst.guard(ctx, func() error { return init.Call(ctx, nil) }); err != nil {
			info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %s: %v", abi.ExportInitialize, err))
			return info, nil
		}
	}
	info.ABIVersion = int32(uint32(inst.callScalar(ctx, abi.ExportABIVersion, &info.Problems)))
	info.Declared = abi.Capability(inst.callScalar(ctx, abi.ExportCapabilities, &info.Problems))
	if info.ABIVersion != abi.Version {
		info.Problems = append(info.Problems, fmt.Sprintf("module implements ABI version %d, this host implements version %d", info.ABIVersion, abi.Version))
	}
	if unknown := info.Declared &^ abi.AllCapabilities; unknown != 0 {
		info.Problems = append(info.Problems, fmt.Sprintf("declares unknown capability bits %#x", uint64(unknown)))
	}
	return info, nil
}

func (inst *guestInstance) callScalar(ctx context.Context, name string, problems *[]string) uint64 {
	var stack [1]uint64
	if err := inst.guard(ctx, func() error { return inst.inst.Function(name).Call(ctx, stack[:]) }); err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", name, err))
		return 0
	}
	return stack[0]
}
