//go:build wasmtime

package wasmtimeengine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// cacheVersion names the on-disk cache's subdirectory: serialized modules
// are only valid for the wasmtime version that wrote them.
const cacheVersion = "wasmtime-go-v37.0.0"

// Engine is the wasmtime engine.
type Engine struct {
	eng      *wasmtime.Engine
	cacheDir string

	mu      sync.Mutex
	modules map[string]*shared // by SHA-256 of the (instrumented) module
}

// shared is a compiled module used by one or more engine.Modules.
type shared struct {
	mod  *wasmtime.Module
	refs int
}

var _ engine.Engine = (*Engine)(nil)

// New returns an engine whose compiled code is also kept in cacheDir (when
// not empty).
func New(cacheDir string) (*Engine, error) {
	cfg := wasmtime.NewConfig()
	cfg.SetWasmMultiMemory(true) // the interrupt flag's memory
	cfg.SetCraneliftOptLevel(wasmtime.OptLevelSpeed)
	e := &Engine{eng: wasmtime.NewEngineWithConfig(cfg), modules: map[string]*shared{}}
	if cacheDir != "" {
		e.cacheDir = filepath.Join(cacheDir, cacheVersion)
		if err := os.MkdirAll(e.cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", cacheDir, err)
		}
	}
	return e, nil
}

// Name implements engine.Engine.
func (*Engine) Name() string { return "wasmtime" }

// Close implements engine.Engine.
func (e *Engine) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, s := range e.modules {
		s.mod.Close()
		delete(e.modules, k)
	}
	e.eng.Close()
	return nil
}

// Compile implements engine.Engine.
func (e *Engine) Compile(ctx context.Context, wasm []byte, cfg engine.ModuleConfig) (engine.Module, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.Interruptible {
		var err error
		if wasm, err = interrupt.InstrumentWith(wasm, interrupt.FlagMemory); err != nil {
			return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
		}
	}
	sum := sha256.Sum256(wasm)
	key := hex.EncodeToString(sum[:])
	mod, err := e.acquire(key, wasm)
	if err != nil {
		return nil, err
	}
	return newModule(e, key, mod, cfg), nil
}

// acquire returns the compiled module for key: shared in memory, else
// deserialized from the disk cache, else compiled (and cached).
func (e *Engine) acquire(key string, wasm []byte) (*wasmtime.Module, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.modules[key]; ok {
		s.refs++
		return s.mod, nil
	}
	mod := e.loadCached(key)
	if mod == nil {
		var err error
		if mod, err = wasmtime.NewModule(e.eng, wasm); err != nil {
			return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
		}
		e.storeCached(key, mod)
	}
	e.modules[key] = &shared{mod: mod, refs: 1}
	return mod, nil
}

func (e *Engine) release(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.modules[key]
	if !ok {
		return
	}
	if s.refs--; s.refs == 0 {
		s.mod.Close()
		delete(e.modules, key)
	}
}

func (e *Engine) cachePath(key string) string { return filepath.Join(e.cacheDir, key+".cwasm") }

// loadCached deserializes a module from the disk cache; a missing or
// unreadable entry (another wasmtime build, a torn write) is a miss.
func (e *Engine) loadCached(key string) *wasmtime.Module {
	if e.cacheDir == "" {
		return nil
	}
	mod, err := wasmtime.NewModuleDeserializeFile(e.eng, e.cachePath(key))
	if err != nil {
		return nil
	}
	return mod
}

// storeCached writes mod to the disk cache, atomically, best effort: a
// cache that cannot be written only costs the next process a compile.
func (e *Engine) storeCached(key string, mod *wasmtime.Module) {
	if e.cacheDir == "" {
		return
	}
	b, err := mod.Serialize()
	if err != nil {
		return
	}
	_ = cachefile.Write(e.cachePath(key), b)
}

// module is an engine.Module: a shared compiled module and the
// configuration its instances get.
type module struct {
	engine  *Engine
	key     string
	mod     *wasmtime.Module
	cfg     engine.ModuleConfig
	exports map[string]engine.Signature
	mems    []string
	imports []engine.Import
	once    sync.Once
}

func newModule(e *Engine, key string, mod *wasmtime.Module, cfg engine.ModuleConfig) *module {
	m := &module{engine: e, key: key, mod: mod, cfg: cfg, exports: map[string]engine.Signature{}}
	for _, ex := range mod.Exports() {
		t := ex.Type()
		switch {
		case t.FuncType() != nil:
			m.exports[ex.Name()] = signatureOf(t.FuncType())
		case t.MemoryType() != nil:
			if !cfg.Interruptible || ex.Name() != interrupt.MemoryName {
				m.mems = append(m.mems, ex.Name())
			}
		}
	}
	for _, im := range mod.Imports() {
		ft := im.Type().FuncType()
		if ft == nil || im.Name() == nil {
			continue
		}
		m.imports = append(m.imports, engine.Import{Module: im.Module(), Name: *im.Name(), Signature: signatureOf(ft)})
	}
	return m
}

func signatureOf(ft *wasmtime.FuncType) engine.Signature {
	var s engine.Signature
	for _, p := range ft.Params() {
		s.Params = append(s.Params, valueType(p.Kind()))
	}
	for _, r := range ft.Results() {
		s.Results = append(s.Results, valueType(r.Kind()))
	}
	return s
}

func valueType(k wasmtime.ValKind) engine.ValueType {
	switch k {
	case wasmtime.KindI32:
		return 0x7f
	case wasmtime.KindI64:
		return 0x7e
	case wasmtime.KindF32:
		return 0x7d
	case wasmtime.KindF64:
		return 0x7c
	case wasmtime.KindFuncref:
		return 0x70
	case wasmtime.KindExternref:
		return 0x6f
	}
	return 0
}

func valKind(t engine.ValueType) wasmtime.ValKind {
	switch t {
	case 0x7e:
		return wasmtime.KindI64
	case 0x7d:
		return wasmtime.KindF32
	case 0x7c:
		return wasmtime.KindF64
	}
	return wasmtime.KindI32
}

func (m *module) ExportedFunctions() map[string]engine.Signature {
	out := make(map[string]engine.Signature, len(m.exports))
	for k, v := range m.exports {
		out[k] = v
	}
	return out
}

func (m *module) ExportedMemories() []string { return slices.Clone(m.mems) }

func (m *module) ImportedFunctions() []engine.Import { return slices.Clone(m.imports) }

func (m *module) Close(context.Context) error {
	m.once.Do(func() { m.engine.release(m.key) })
	return nil
}
