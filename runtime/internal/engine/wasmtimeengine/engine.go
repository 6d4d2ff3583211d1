//go:build wasmtime

package wasmtimeengine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine/compiler"
	"github.com/wasmprov/wasmprov/runtime/internal/instrumented"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// cacheVersion names the on-disk cache's subdirectory: serialized modules
// are only valid for the wasmtime version that wrote them.
const cacheVersion = "wasmtime-go-v37.0.0"

// Engine is the wasmtime engine.
type Engine struct {
	eng      *wasmtime.Engine
	cacheDir string // of serialized modules; "" when they are kept in memory only
	// instrumented keeps the interruptible modules under the cache
	// directory given to New.
	instrumented *instrumented.Cache
	cc           compiler.Config
	// exe is the binary started as the compiler process; "" compiles in
	// process.
	exe string
	// ctx ends at Close, which kills the compiles still running.
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	modules map[string]*shared // by SHA-256 of the (instrumented) module
	builds  sync.WaitGroup     // compiles in flight, which Close waits for
	// live counts the wasmtime modules not yet closed (for tests: an
	// abandoned compile must not leak its module).
	live atomic.Int64
	// spawns counts the compiler processes started; onSpawn, when set
	// (tests), is told each one's pid.
	spawns  atomic.Int64
	onSpawn func(pid int)
}

// shared is a compiled module used by one or more engine.Modules, or being
// compiled for the callers waiting on done.
type shared struct {
	done chan struct{} // closed when mod or err is set
	mod  *wasmtime.Module
	err  error
	refs int // holders and waiters
	// cancel stops the compile (kills its compiler process) once no one
	// waits for it.
	cancel context.CancelFunc
}

var _ engine.Engine = (*Engine)(nil)

// New returns an engine whose compiled code, and the instrumented modules
// of interruptible compiles (package instrumented), are also kept in
// cacheDir (when not empty). Modules are compiled in a child process (see the package
// documentation) unless opts say otherwise or this binary cannot be
// started again.
func New(cacheDir string, opts ...Option) (*Engine, error) {
	o := options{Config: compiler.Config{OptLevel: wasmtime.OptLevelSpeed, MemoryLimit: DefaultCompileMemoryLimit}}
	for _, opt := range opts {
		opt(&o)
	}
	e := &Engine{eng: wasmtime.NewEngineWithConfig(o.WasmtimeConfig()), cc: o.Config, modules: map[string]*shared{},
		instrumented: instrumented.NewCache(cacheDir)}
	if !o.inProcess {
		e.exe = compilerPath()
	}
	e.ctx, e.stop = context.WithCancel(context.Background())
	if cacheDir != "" {
		// Serialized modules are only valid for the wasmtime version and
		// settings that wrote them.
		dir := cacheVersion
		if o.OptLevel != wasmtime.OptLevelSpeed {
			dir += fmt.Sprintf("-opt%d", o.OptLevel)
		}
		e.cacheDir = filepath.Join(cacheDir, dir)
		if err := os.MkdirAll(e.cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("compilation cache %s: %w", cacheDir, err)
		}
	}
	return e, nil
}

// Instrumented is the engine's cache of instrumented modules (its Stats are
// for tests).
func (e *Engine) Instrumented() *instrumented.Cache { return e.instrumented }

// Name implements engine.Engine.
func (*Engine) Name() string { return "wasmtime" }

// Close implements engine.Engine. It kills the compiler processes still
// running for callers that gave up on them and waits for them (and for
// compiles in process): they use the engine.
func (e *Engine) Close(context.Context) error {
	e.stop()
	e.builds.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, s := range e.modules {
		if s.mod != nil {
			e.closeModule(s.mod)
		}
		delete(e.modules, k)
	}
	e.eng.Close()
	return nil
}

func (e *Engine) closeModule(m *wasmtime.Module) {
	m.Close()
	e.live.Add(-1)
}

// Compile implements engine.Engine.
func (e *Engine) Compile(ctx context.Context, wasm []byte, cfg engine.ModuleConfig) (engine.Module, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Compiled code is keyed by the SHA-256 of the module it compiles: the
	// instrumented one's comes from the instrumented cache, which a warm
	// process reads instead of rewriting the module.
	var sum [sha256.Size]byte
	if cfg.Interruptible {
		var err error
		if wasm, sum, err = e.instrumented.Get(cfg.Instrumentable(wasm), interrupt.FlagMemory); err != nil {
			if errors.Is(err, instrumented.ErrInstrument) {
				return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
			}
			return nil, err // the check's
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	} else {
		checked, err := cfg.Checked(wasm)
		if err != nil {
			return nil, err
		}
		if cfg.Digest != ([sha256.Size]byte{}) && len(wasm) > 0 && len(checked) == len(wasm) && &checked[0] == &wasm[0] {
			sum = cfg.Digest // the check returned the module itself
		} else {
			sum = sha256.Sum256(checked)
		}
		wasm = checked
	}
	key := hex.EncodeToString(sum[:])
	s, err := e.acquire(ctx, key, wasm)
	if err != nil {
		return nil, err
	}
	return newModule(e, key, s, cfg), nil
}

// acquire returns the compiled module for key: shared in memory, else
// deserialized from the disk cache, else compiled (and cached). The compile
// runs on a goroutine of its own, and acquire gives up on it when ctx ends,
// returning ctx's error; once no caller waits for it any more, the compile
// is stopped — its compiler process killed. (Compiling in process, it
// cannot be: it goes on and, if no one wants its module by then, releases
// it, the disk cache still getting it.)
func (e *Engine) acquire(ctx context.Context, key string, wasm []byte) (*shared, error) {
	e.mu.Lock()
	s, ok := e.modules[key]
	if !ok {
		bctx, cancel := context.WithCancel(e.ctx)
		s = &shared{done: make(chan struct{}), cancel: cancel}
		e.modules[key] = s
		e.builds.Add(1)
		go e.build(bctx, key, s, slices.Clone(wasm)) // the caller may reuse wasm once it gives up
	}
	s.refs++
	e.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		e.unref(key, s)
		return nil, fmt.Errorf("compiling module: %w", ctx.Err())
	}
	if s.err != nil {
		e.unref(key, s)
		return nil, s.err
	}
	return s, nil
}

// build compiles (or loads) the module of s and hands it to its waiters.
func (e *Engine) build(ctx context.Context, key string, s *shared, wasm []byte) {
	defer e.builds.Done()
	defer s.cancel()
	mod := e.loadCached(key) // a hit starts no compiler process
	var err error
	if mod == nil {
		mod, err = e.compile(ctx, key, wasm)
	}
	if mod != nil {
		e.live.Add(1)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s.mod, s.err = mod, err
	close(s.done)
	if err != nil || s.refs == 0 {
		// A failed compile is not kept (the next attempt compiles again);
		// one nobody waits for any more is released.
		if e.modules[key] == s {
			delete(e.modules, key)
		}
		if mod != nil && s.refs == 0 {
			e.closeModule(mod)
			s.mod = nil
		}
	}
}

// compile compiles wasm, in a compiler process unless there is none, and
// stores the result in the disk cache.
func (e *Engine) compile(ctx context.Context, key string, wasm []byte) (*wasmtime.Module, error) {
	if e.exe == "" {
		mod, err := wasmtime.NewModule(e.eng, wasm)
		if err != nil {
			return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
		}
		if e.cacheDir != "" {
			if b, err := mod.Serialize(); err == nil {
				e.storeCached(key, b)
			}
		}
		return mod, nil
	}
	mod, b, err := e.compileInChild(ctx, wasm)
	if err != nil {
		return nil, err
	}
	e.storeCached(key, b)
	return mod, nil
}

// unref drops a reference to s; the last one closes its module, or stops
// its compile.
func (e *Engine) unref(key string, s *shared) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	select {
	case <-s.done:
	default:
		if e.exe != "" {
			// The compile is killed; whoever wants the module next
			// compiles it anew.
			s.cancel()
			if e.modules[key] == s {
				delete(e.modules, key)
			}
		}
		return // still compiling: build releases it
	}
	if e.modules[key] == s {
		delete(e.modules, key)
	}
	if s.mod != nil {
		e.closeModule(s.mod)
		s.mod = nil
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

// storeCached writes a serialized module to the disk cache, atomically,
// best effort: a cache that cannot be written only costs the next process a
// compile.
func (e *Engine) storeCached(key string, b []byte) {
	if e.cacheDir == "" {
		return
	}
	_ = cachefile.Write(e.cachePath(key), b)
}

// module is an engine.Module: a shared compiled module and the
// configuration its instances get.
type module struct {
	engine  *Engine
	key     string
	shared  *shared
	mod     *wasmtime.Module
	cfg     engine.ModuleConfig
	exports map[string]engine.Signature
	mems    []string
	imports []engine.Import
	// binds are the host functions of the module's imports, in import
	// order, resolved once (nil where nothing serves an import: the
	// instantiation fails).
	binds []*binding
	once  sync.Once
}

func newModule(e *Engine, key string, s *shared, cfg engine.ModuleConfig) *module {
	mod := s.mod
	m := &module{engine: e, key: key, shared: s, mod: mod, cfg: cfg, exports: map[string]engine.Signature{}}
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
	wasi := map[string]wasip1.Function{}
	for _, f := range wasip1.Functions() {
		wasi[f.Name] = f
	}
	host := map[[2]string]hostmodule.Function{}
	for _, f := range cfg.HostFunctions {
		host[[2]string{f.Module, f.Name}] = f
	}
	for _, im := range mod.Imports() {
		ft := im.Type().FuncType()
		if ft == nil || im.Name() == nil {
			m.binds = append(m.binds, &binding{module: im.Module(), name: derefName(im.Name())})
			continue
		}
		name := *im.Name()
		m.imports = append(m.imports, engine.Import{Module: im.Module(), Name: name, Signature: signatureOf(ft)})
		b := &binding{module: im.Module(), name: name}
		switch im.Module() {
		case wasip1.ModuleName:
			if f, ok := wasi[name]; ok {
				b.wasi, b.params, b.results = f.Fn, f.Params, f.Results
			}
		default:
			if f, ok := host[[2]string{im.Module(), name}]; ok {
				b.host, b.params, b.results = f.Fn, f.Params, f.Results
			}
		}
		if b.wasi != nil || b.host != nil {
			b.ty = funcType(b.params, b.results)
		}
		m.binds = append(m.binds, b)
	}
	return m
}

func derefName(p *string) string {
	if p == nil {
		return ""
	}
	return *p
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

// valueType is k's binary encoding; 0 for a kind wasmtime-go names no
// constant for (v128), which no ABI signature has.
func valueType(k wasmtime.ValKind) engine.ValueType {
	switch k {
	case wasmtime.KindI32:
		return wasmbin.ValueTypeI32
	case wasmtime.KindI64:
		return wasmbin.ValueTypeI64
	case wasmtime.KindF32:
		return wasmbin.ValueTypeF32
	case wasmtime.KindF64:
		return wasmbin.ValueTypeF64
	case wasmtime.KindFuncref:
		return wasmbin.ValueTypeFuncref
	case wasmtime.KindExternref:
		return wasmbin.ValueTypeExternref
	}
	return 0
}

// valKind is the kind of a host function's value type (hostmodule and
// wasip1 use the numeric types only).
func valKind(t engine.ValueType) wasmtime.ValKind {
	switch t {
	case wasmbin.ValueTypeI64:
		return wasmtime.KindI64
	case wasmbin.ValueTypeF32:
		return wasmtime.KindF32
	case wasmbin.ValueTypeF64:
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
	m.once.Do(func() { m.engine.unref(m.key, m.shared) })
	return nil
}
