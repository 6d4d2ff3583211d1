// Package wazeroengine runs modules on wazero, the default engine: pure Go,
// no cgo, a compilation cache that can live on disk.
//
// Deadlines do not use wazero's WithCloseOnContextDone, which makes every
// loop header an indirect call into the engine and starts a goroutine per
// call (2-3x on a Go guest's method call). Modules are instead instrumented
// (package interrupt, FlagBudget) to count down a private budget at every
// function entry and loop header and, every interrupt.Budget checks, call
// the host's yield function. Yield is where Interrupt takes effect (it
// panics, which wazero turns into an error), and it is a Go safe point:
// wazero runs compiled code outside the Go scheduler's reach, so without it
// a guest looping with no host call would keep a garbage collection's
// stop-the-world — and with it the whole process, including the goroutine
// that would interrupt the guest — waiting forever.
package wazeroengine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// Engine is the wazero engine.
type Engine struct {
	cache     wazero.CompilationCache
	cacheDir  string // "" when the cache is in memory
	allocator experimental.MemoryAllocator
	// instances maps a guest's api.Module to its instance, for yield.
	instances sync.Map
}

var _ engine.Engine = (*Engine)(nil)

// Option configures New.
type Option func(*Engine)

// WithMemoryAllocator backs linear memories with a (nil: wazero's Go slices).
func WithMemoryAllocator(a experimental.MemoryAllocator) Option {
	return func(e *Engine) { e.allocator = a }
}

// New returns an engine whose compiled code is cached in cacheDir (in
// memory when empty). The cache is keyed by module content, wazero version
// and architecture, and may be shared between processes.
func New(cacheDir string, opts ...Option) (*Engine, error) {
	e := &Engine{}
	for _, o := range opts {
		o(e)
	}
	if cacheDir == "" {
		e.cache = wazero.NewCompilationCache()
		return e, nil
	}
	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("compilation cache %s: %w", cacheDir, err)
	}
	e.cache, e.cacheDir = cache, cacheDir
	return e, nil
}

// Name implements engine.Engine.
func (*Engine) Name() string { return "wazero" }

// Close implements engine.Engine.
func (e *Engine) Close(ctx context.Context) error { return e.cache.Close(ctx) }

// Compile implements engine.Engine. Each module gets a wazero runtime of its
// own, because the memory limit is a runtime setting; compiled code is
// shared through the engine's cache.
func (e *Engine) Compile(ctx context.Context, wasm []byte, cfg engine.ModuleConfig) (_ engine.Module, err error) {
	if cfg.Interruptible {
		if wasm, err = e.instrument(wasm); err != nil {
			return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(false)
	wr := wazero.NewRuntimeWithConfig(ctx, rc)
	defer func() {
		if err != nil {
			_ = wr.Close(context.WithoutCancel(ctx))
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, wr); err != nil {
		return nil, fmt.Errorf("instantiating WASI: %w", err)
	}
	if _, err := hostfuncs.InstantiateFunctions(ctx, wr, cfg.HostFunctions); err != nil {
		return nil, err
	}
	if cfg.Interruptible {
		if err := e.bindYield(ctx, wr); err != nil {
			return nil, err
		}
	}
	compiled, err := compileModule(ctx, wr, wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
	}
	return &module{engine: e, wr: wr, compiled: compiled, interruptible: cfg.Interruptible}, nil
}

// compileModule is wr.CompileModule for untrusted input: a panic in
// wazero's decoder or validator (v1.12.0 has one, on a type index out of
// range in the function section) is an invalid module, not a dead host.
func compileModule(ctx context.Context, wr wazero.Runtime, wasm []byte) (c wazero.CompiledModule, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("wazero failed on the module: %v", r)
		}
	}()
	return wr.CompileModule(ctx, wasm)
}

// instrument returns wasm rewritten with interrupt.FlagBudget. With an
// on-disk cache the result is kept next to the compiled code, keyed by the
// original module's SHA-256 and the instrumenter's format: rewriting an
// 11 MB Go guest takes hundreds of milliseconds, which a process start with
// a warm cache would otherwise pay on every load.
func (e *Engine) instrument(wasm []byte) ([]byte, error) {
	if e.cacheDir == "" {
		return interrupt.InstrumentWith(wasm, interrupt.FlagBudget)
	}
	sum := sha256.Sum256(wasm)
	dir := filepath.Join(e.cacheDir, fmt.Sprintf("wasmprov-instrumented-v%d", interrupt.FormatVersion))
	path := filepath.Join(dir, hex.EncodeToString(sum[:])+".wasm")
	if b, ok := readCached(path); ok {
		return b, nil
	}
	out, err := interrupt.InstrumentWith(wasm, interrupt.FlagBudget)
	if err != nil {
		return nil, err
	}
	sum = sha256.Sum256(out)
	_ = cachefile.Write(path, append(sum[:], out...)) // best effort: a miss only costs the rewrite
	return out, nil
}

// A cache file is the SHA-256 of the module followed by the module, so a
// damaged file is a miss rather than a module that fails to compile.
func readCached(path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < sha256.Size {
		return nil, false
	}
	body := b[sha256.Size:]
	if sum := sha256.Sum256(body); string(sum[:]) != string(b[:sha256.Size]) {
		return nil, false
	}
	return body, true
}

// errInterrupted is what yield panics with; the runtime knows it
// interrupted the call and reports the context's error instead.
var errInterrupted = errors.New("guest call interrupted by the host")

// bindYield defines the function the instrumented guest calls every
// interrupt.Budget checks.
func (e *Engine) bindYield(ctx context.Context, wr wazero.Runtime) error {
	_, err := wr.NewHostModuleBuilder(interrupt.YieldModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, mod api.Module, _ []uint64) {
			if v, ok := e.instances.Load(mod); ok && v.(*instance).interrupted.Load() {
				panic(errInterrupted)
			}
		}), nil, nil).
		Export(interrupt.YieldName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiating %s host module: %w", interrupt.YieldModule, err)
	}
	return nil
}

type module struct {
	engine        *Engine
	wr            wazero.Runtime
	compiled      wazero.CompiledModule
	interruptible bool
}

func (m *module) ExportedFunctions() map[string]engine.Signature {
	out := map[string]engine.Signature{}
	for name, def := range m.compiled.ExportedFunctions() {
		out[name] = engine.Signature{Params: def.ParamTypes(), Results: def.ResultTypes()}
	}
	return out
}

func (m *module) ExportedMemories() []string {
	var names []string
	for name := range m.compiled.ExportedMemories() {
		names = append(names, name)
	}
	return names
}

func (m *module) ImportedFunctions() []engine.Import {
	var out []engine.Import
	for _, def := range m.compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		if m.interruptible && mod == interrupt.YieldModule {
			continue // added by the instrumentation
		}
		out = append(out, engine.Import{Module: mod, Name: name,
			Signature: engine.Signature{Params: def.ParamTypes(), Results: def.ResultTypes()}})
	}
	return out
}

// Close releases the module and its runtime. The compilation cache is
// shared by every module: closing the runtime alone would leave this
// module's code in it.
func (m *module) Close(ctx context.Context) error {
	_ = m.compiled.Close(ctx)
	return m.wr.Close(ctx)
}

func (m *module) Instantiate(ctx context.Context, c engine.InstanceConfig) (engine.Instance, error) {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions() // the runtime runs _initialize, under its deadline
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		cfg = cfg.WithEnv(k, v)
	}
	if c.Stdout != nil {
		cfg = cfg.WithStdout(c.Stdout)
	}
	if c.Stderr != nil {
		cfg = cfg.WithStderr(c.Stderr)
	}
	if c.Clock {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	if c.Random {
		cfg = cfg.WithRandSource(rand.Reader)
	}
	if m.engine.allocator != nil {
		ctx = experimental.WithMemoryAllocator(ctx, m.engine.allocator)
	}
	mod, err := m.wr.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, convert(err)
	}
	inst := &instance{engine: m.engine, mod: mod, interruptible: m.interruptible}
	if inst.interruptible {
		m.engine.instances.Store(mod, inst)
	}
	return inst, nil
}

type instance struct {
	engine        *Engine
	mod           api.Module
	interruptible bool
	interrupted   atomic.Bool
}

func (i *instance) Function(name string) engine.Function {
	f := i.mod.ExportedFunction(name)
	if f == nil {
		return nil
	}
	return function{f}
}

func (i *instance) Interruptible() bool { return i.interruptible }

// Interrupt marks the instance; the guest's next yield (within
// interrupt.Budget checks) panics out of the call. Nothing is written into
// the guest from this goroutine.
func (i *instance) Interrupt() { i.interrupted.Store(true) }

func (i *instance) Close(ctx context.Context) error {
	i.engine.instances.Delete(i.mod)
	return i.mod.Close(ctx)
}

type function struct{ f api.Function }

func (f function) Call(ctx context.Context, stack []uint64) error {
	if err := f.f.CallWithStack(ctx, stack); err != nil {
		return convert(err)
	}
	return nil
}

// convert turns a WASI exit into *engine.ExitError; other errors are traps.
func convert(err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return &engine.ExitError{Code: exit.ExitCode()}
	}
	return err
}
