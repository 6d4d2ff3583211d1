package runtime

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
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
// well-formed one is described, with Problems set.
func (r *Runtime) Inspect(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	info := &ModuleInfo{Size: len(wasm), SHA256: digest(wasm)}
	wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(r.cache).WithCloseOnContextDone(true))
	defer wr.Close(context.WithoutCancel(ctx))
	compiled, err := wr.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", ErrInvalidModule, err)
	}
	for _, name := range sortedKeys(compiled.ExportedFunctions()) {
		def := compiled.ExportedFunctions()[name]
		info.Exports = append(info.Exports, fmt.Sprintf("%s %s", name, signature{def.ParamTypes(), def.ResultTypes()}))
	}
	for name := range compiled.ExportedMemories() {
		info.Exports = append(info.Exports, name+" (memory)")
	}
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		info.Imports = append(info.Imports, fmt.Sprintf("%s.%s %s", mod, name, signature{def.ParamTypes(), def.ResultTypes()}))
	}
	if info.Problems = validate(compiled); len(info.Problems) > 0 {
		return info, nil
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, wr); err != nil {
		return nil, err
	}
	if _, err := hostfuncs.Instantiate(ctx, wr); err != nil {
		return nil, err
	}
	shell := &Provider{logger: slog.New(slog.DiscardHandler)}
	mod, err := wr.InstantiateModule(ctx, compiled, shell.moduleConfig(0))
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %v", err))
		return info, nil
	}
	defer mod.Close(ctx)
	if init := mod.ExportedFunction(abi.ExportInitialize); init != nil { // moduleConfig leaves it to the caller
		if err := init.CallWithStack(ctx, nil); err != nil {
			info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %s: %v", abi.ExportInitialize, err))
			return info, nil
		}
	}
	info.ABIVersion = int32(uint32(callScalar(ctx, mod, abi.ExportABIVersion, &info.Problems)))
	info.Declared = abi.Capability(callScalar(ctx, mod, abi.ExportCapabilities, &info.Problems))
	if info.ABIVersion != abi.Version {
		info.Problems = append(info.Problems, fmt.Sprintf("module implements ABI version %d, this host implements version %d", info.ABIVersion, abi.Version))
	}
	if unknown := info.Declared &^ abi.AllCapabilities; unknown != 0 {
		info.Problems = append(info.Problems, fmt.Sprintf("declares unknown capability bits %#x", uint64(unknown)))
	}
	return info, nil
}

func callScalar(ctx context.Context, mod api.Module, name string, problems *[]string) uint64 {
	var stack [1]uint64
	if err := mod.ExportedFunction(name).CallWithStack(ctx, stack[:]); err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", name, err))
		return 0
	}
	return stack[0]
}
