// Package wazeroengine runs modules on wazero, the default engine: pure Go,
// no cgo, a compilation cache that can live on disk. Interruptible modules
// are instrumented with interrupt.FlagBudget (through package instrumented):
// the guest calls a host yield function every interrupt.Budget units of
// work, where Interrupt takes effect and the Go scheduler can stop the
// world; every host function call is an interruption point too. WASI is
// package wasip1's, bound as wasi_snapshot_preview1. Host functions find
// their instance in the context of the call (callContext). Why it works
// this way: runtime/RATIONALE.md, "Interruption".
package wazeroengine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/instrumented"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/memimage"
	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
)

// Engine is the wazero engine.
type Engine struct {
	cache        wazero.CompilationCache
	instrumented *instrumented.Cache
	mapped       *mmapmem.Allocator

	// shared holds every open module by what it was compiled from: a second
	// Compile of the same bytes with the same configuration (a provider
	// loaded twice, or modules that instrument to the same bytes) takes the
	// first's runtime and compiled module, whose decoded form (wazero keeps
	// the module's code and data segments, several MiB for a Go guest) is
	// then held once.
	mu     sync.Mutex
	shared map[sharedKey]*sharedModule

	// abandoned counts the compiles a Compile gave up on when its context
	// ended (compileWithin), still finishing in the background; Close waits
	// for them before it closes the cache they use.
	abandoned sync.WaitGroup
}

// sharedKey is what a compiled module depends on: the bytes compiled, the
// memory limit (a runtime setting), and the host functions bound, by the
// identity of the slice that holds them. Function values cannot be compared
// (and two closures of one literal share their code pointer while closing
// over different state), so only compiles given the very same slice share:
// the runtime always passes hostmodule.Functions(), one slice built once;
// a caller with host functions of its own never shares with another.
type sharedKey struct {
	digest        [sha256.Size]byte
	pages         uint32
	interruptible bool
	host          *hostmodule.Function
	hosts         int
}

type sharedModule struct {
	key      sharedKey
	wr       wazero.Runtime
	compiled wazero.CompiledModule
	// image holds the module's active data (memimage.Split), which compiled
	// no longer writes: every instance maps it (nil: compiled has its data).
	image *mmapmem.Image
	refs  int
}

// close releases what sm holds.
func (sm *sharedModule) close(ctx context.Context) error {
	_ = sm.compiled.Close(ctx)
	err := sm.wr.Close(ctx)
	if sm.image != nil {
		_ = sm.image.Close()
	}
	return err
}

var _ engine.Engine = (*Engine)(nil)

// Option configures New.
type Option func(*Engine)

// WithMappedMemory backs linear memories with a (nil: wazero's Go slices)
// and, where the platform has memory images (mmapmem.NewImage), moves the
// active data of a module that has enough (memimage.Split) into an image
// every instance maps copy-on-write: its pages are held once, not once per
// instance.
func WithMappedMemory(a *mmapmem.Allocator) Option {
	return func(e *Engine) { e.mapped = a }
}

// New returns an engine whose compiled code is cached in cacheDir (in
// memory when empty). The cache is keyed by module content, wazero version
// and architecture, and may be shared between processes; the instrumented
// modules of interruptible compiles are kept there too (package
// instrumented).
func New(cacheDir string, opts ...Option) (*Engine, error) {
	e := &Engine{instrumented: instrumented.NewCache(cacheDir)}
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
	e.cache = cache
	return e, nil
}

// Instrumented is the engine's cache of instrumented modules (its Stats are
// for tests).
func (e *Engine) Instrumented() *instrumented.Cache { return e.instrumented }

// Name implements engine.Engine.
func (*Engine) Name() string { return "wazero" }

// Close implements engine.Engine.
func (e *Engine) Close(ctx context.Context) error {
	e.abandoned.Wait()
	return e.cache.Close(ctx)
}

// Compile implements engine.Engine. Each module gets a wazero runtime of its
// own, because the memory limit is a runtime setting; compiled code is
// shared through the engine's cache.
func (e *Engine) Compile(ctx context.Context, wasm []byte, cfg engine.ModuleConfig) (_ engine.Module, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var digest [sha256.Size]byte
	if cfg.Interruptible {
		if wasm, digest, err = e.instrumented.Get(cfg.Instrumentable(wasm), interrupt.FlagBudget); err != nil {
			if errors.Is(err, instrumented.ErrInstrument) {
				return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
			}
			return nil, err // the check's
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	} else if wasm, err = cfg.Checked(wasm); err != nil {
		return nil, err
	} else {
		digest = sha256.Sum256(wasm)
	}
	key := sharedKey{digest: digest, pages: cfg.MemoryLimitPages, interruptible: cfg.Interruptible, host: unsafe.SliceData(cfg.HostFunctions), hosts: len(cfg.HostFunctions)}
	if sm := e.acquire(key); sm != nil {
		return &module{engine: e, sh: sm, wr: sm.wr, compiled: sm.compiled, interruptible: cfg.Interruptible}, nil
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(false)
	wr := wazero.NewRuntimeWithConfig(ctx, rc)
	abandoned := false // wr belongs to a compile still running
	defer func() {
		if err != nil && !abandoned {
			_ = wr.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := bindWASI(ctx, wr); err != nil {
		return nil, err
	}
	if err := bindHostFunctions(ctx, wr, cfg.HostFunctions); err != nil {
		return nil, err
	}
	if cfg.Interruptible {
		if err := bindYield(ctx, wr); err != nil {
			return nil, err
		}
	}
	image := e.memoryImage(&wasm)
	var compiled wazero.CompiledModule
	compiled, abandoned, err = e.compileWithin(ctx, wr, wasm)
	if err != nil {
		if image != nil {
			_ = image.Close()
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("compiling module: %w", ctxErr)
		}
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", engine.ErrInvalidModule, err)
	}
	sm := e.publish(ctx, &sharedModule{key: key, wr: wr, compiled: compiled, image: image, refs: 1})
	return &module{engine: e, sh: sm, wr: sm.wr, compiled: sm.compiled, interruptible: cfg.Interruptible}, nil
}

// memoryImage moves *wasm's active data into an image when memory is
// mapped and the module qualifies (memimage.Split), and returns it; else
// nil, and *wasm is left alone. A module that does not qualify, or an image
// the OS refuses, costs nothing but the data held per instance.
func (e *Engine) memoryImage(wasm *[]byte) *mmapmem.Image {
	if e.mapped == nil {
		return nil
	}
	stripped, content, ok := memimage.Split(*wasm)
	if !ok {
		return nil
	}
	im, err := mmapmem.NewImage(content)
	if err != nil {
		return nil
	}
	*wasm = stripped
	return im
}

// acquire returns the open module compiled for key, with one more
// reference, or nil.
func (e *Engine) acquire(key sharedKey) *sharedModule {
	e.mu.Lock()
	defer e.mu.Unlock()
	sm := e.shared[key]
	if sm != nil {
		sm.refs++
	}
	return sm
}

// publish records sm, unless a concurrent Compile of the same key did
// first: then sm is closed and that one is shared.
func (e *Engine) publish(ctx context.Context, sm *sharedModule) *sharedModule {
	e.mu.Lock()
	if other := e.shared[sm.key]; other != nil {
		other.refs++
		e.mu.Unlock()
		_ = sm.close(ctx)
		return other
	}
	if e.shared == nil {
		e.shared = map[sharedKey]*sharedModule{}
	}
	e.shared[sm.key] = sm
	e.mu.Unlock()
	return sm
}

// compilationWorkers is how many goroutines compile a module. wazero checks
// the context between functions only when it compiles with more than one,
// so there are at least two even on one CPU: a load whose deadline passes
// stops within one function's compile, not after the whole module's.
func compilationWorkers() int { return max(2, min(goruntime.GOMAXPROCS(0), 4)) }

// compileWithin compiles wasm on wr and returns when the compile ends or,
// sooner, when ctx does (abandoned): wazero's workers look at the context
// only between functions, and one function within the precheck's limits
// can take wazero a second or two (docs/SECURITY.md, "Loading a module"),
// which a load past its deadline should not wait for. An abandoned compile
// runs on in the background, each worker to the end of the function it is
// in, then closes what it made and wr; Close waits for it.
func (e *Engine) compileWithin(ctx context.Context, wr wazero.Runtime, wasm []byte) (_ wazero.CompiledModule, abandoned bool, _ error) {
	type result struct {
		compiled wazero.CompiledModule
		err      error
	}
	done := make(chan result, 1)
	e.abandoned.Add(1)
	go func() {
		c, err := compileModule(experimental.WithCompilationWorkers(ctx, compilationWorkers()), wr, wasm)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		e.abandoned.Done()
		return r.compiled, false, r.err
	case <-ctx.Done():
		go func() {
			defer e.abandoned.Done()
			r := <-done
			bg := context.WithoutCancel(ctx)
			if r.compiled != nil {
				_ = r.compiled.Close(bg)
			}
			_ = wr.Close(bg)
		}()
		return nil, true, ctx.Err()
	}
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

// instantiateModule is wr.InstantiateModule, a panic an error: wazero
// panics when an allocator returns no memory for the initial size (an
// image that cannot be read back, mmapmem.WithImage), which is a failed
// instantiation, not a dead host.
func instantiateModule(ctx context.Context, wr wazero.Runtime, compiled wazero.CompiledModule, cfg wazero.ModuleConfig) (mod api.Module, err error) {
	defer func() {
		if r := recover(); r != nil {
			mod, err = nil, fmt.Errorf("wazero failed to instantiate the module: %v", r)
		}
	}()
	return wr.InstantiateModule(ctx, compiled, cfg)
}

// errInterrupted is what an interrupted instance's yield and host
// functions panic with; the runtime knows it interrupted the call and
// reports the context's error instead.
var errInterrupted = wasip1.ErrInterrupted

// errNoInstance is a host function called outside Function.Call and
// Instantiate: a bug in this engine, never a guest's doing.
var errNoInstance = errors.New("wazero engine: host function called without its instance")

// callContext is the context of every call into an instance: the caller's
// context and the instance, which host functions take from it.
type callContext struct {
	context.Context
	inst *instance
}

// instanceOf returns the instance of a host function call.
func instanceOf(ctx context.Context) *callContext {
	c, ok := ctx.(*callContext)
	if !ok || c.inst == nil {
		panic(errNoInstance)
	}
	return c
}

// memoryOf is the guest's memory, or an empty one if it has none (wazero's
// own WASI would dereference nil).
func memoryOf(mod api.Module) hostmodule.Memory {
	if m := mod.Memory(); m != nil {
		return m
	}
	return noMemory{}
}

type noMemory struct{}

func (noMemory) Read(offset, n uint32) ([]byte, bool) { return nil, offset == 0 && n == 0 }
func (noMemory) Write(offset uint32, v []byte) bool   { return offset == 0 && len(v) == 0 }

// bindWASI defines the wasi_snapshot_preview1 host module: package
// wasip1's functions, each given the calling instance's state, and none
// run once the instance was interrupted.
func bindWASI(ctx context.Context, wr wazero.Runtime) error {
	b := wr.NewHostModuleBuilder(wasip1.ModuleName)
	for _, f := range wasip1.Functions() {
		fn := f.Fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				c := instanceOf(ctx)
				if c.inst.wasi.Interrupted() {
					panic(errInterrupted)
				}
				fn(c.Context, c.inst.wasi, memoryOf(mod), stack)
			}), f.Params, f.Results).
			Export(f.Name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiating %s host module: %w", wasip1.ModuleName, err)
	}
	return nil
}

// bindHostFunctions defines a host module for each import module of fns
// (wasmprov_v1, and an embedder's modules): the wazero binding of
// hostmodule.Table, with the interrupt check. The host functions get the
// caller's context, as wazerohost.Instantiate gives them.
func bindHostFunctions(ctx context.Context, wr wazero.Runtime, fns []hostmodule.Function) error {
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, f := range fns {
		b, ok := builders[f.Module]
		if !ok {
			b = wr.NewHostModuleBuilder(f.Module)
			builders[f.Module] = b
			order = append(order, f.Module)
		}
		fn := f.Fn
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				c := instanceOf(ctx)
				if c.inst.wasi.Interrupted() {
					panic(errInterrupted)
				}
				fn(c.Context, memoryOf(mod), stack)
			}), f.Params, f.Results).
			Export(f.Name)
	}
	for _, name := range order {
		if _, err := builders[name].Instantiate(ctx); err != nil {
			return fmt.Errorf("instantiating %s host module: %w", name, err)
		}
	}
	return nil
}

// bindYield defines the function the instrumented guest calls every
// interrupt.Budget units of work.
func bindYield(ctx context.Context, wr wazero.Runtime) error {
	_, err := wr.NewHostModuleBuilder(interrupt.YieldModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
			if instanceOf(ctx).inst.wasi.Interrupted() {
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
	sh            *sharedModule
	wr            wazero.Runtime
	compiled      wazero.CompiledModule
	interruptible bool
	closeOnce     sync.Once
	closeErr      error
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
//
// A module shared by several Compiles is released by the last Close.
func (m *module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		e := m.engine
		e.mu.Lock()
		m.sh.refs--
		last := m.sh.refs == 0
		if last {
			delete(e.shared, m.sh.key)
		}
		e.mu.Unlock()
		if last {
			m.closeErr = m.sh.close(ctx)
		}
	})
	return m.closeErr
}

func (m *module) Instantiate(ctx context.Context, c engine.InstanceConfig) (engine.Instance, error) {
	state, err := wasip1.New(c)
	if err != nil {
		return nil, err
	}
	// The WASI configuration is the state's; wazero's own sys context is
	// left at its defaults, which nothing reads.
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions() // the runtime runs _initialize, under its deadline
	switch {
	case m.sh.image != nil:
		ctx = experimental.WithMemoryAllocator(ctx, m.engine.mapped.WithImage(m.sh.image))
	case m.engine.mapped != nil:
		ctx = experimental.WithMemoryAllocator(ctx, m.engine.mapped)
	}
	inst := &instance{wasi: state, interruptible: m.interruptible}
	inst.call.inst = inst
	// A start section's host calls find the instance like any other, and
	// the end of ctx interrupts it (at its next yield or host call): no one
	// else can, as the instance is not returned yet.
	inst.call.Context = ctx
	stop := context.AfterFunc(ctx, state.Interrupt)
	mod, err := instantiateModule(&inst.call, m.wr, m.compiled, cfg)
	interrupted := !stop()
	inst.call.Context = nil
	if interrupted {
		if err == nil {
			_ = mod.Close(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("instantiating module: %w", ctx.Err())
	}
	if err != nil {
		return nil, convert(err)
	}
	inst.mod = mod
	return inst, nil
}

type instance struct {
	mod           api.Module
	wasi          *wasip1.State
	interruptible bool
	// call is the context of the call in flight (used by one goroutine at
	// a time, like the instance); host functions find the instance in it.
	// It is not retained past the call: host functions get the caller's
	// context, not this one.
	call callContext
}

func (i *instance) Function(name string) engine.Function {
	f := i.mod.ExportedFunction(name)
	if f == nil {
		return nil
	}
	return function{i: i, f: f}
}

func (i *instance) Interruptible() bool { return i.interruptible }

// Interrupt marks the instance: the guest's next yield (within
// interrupt.Budget units of work) or host call panics out of the call, and a
// sleeping poll_oneoff wakes up and does. Nothing is written into the guest
// from this goroutine.
func (i *instance) Interrupt() { i.wasi.Interrupt() }

func (i *instance) Close(ctx context.Context) error { return i.mod.Close(ctx) }

type function struct {
	i *instance
	f api.Function
}

func (f function) Call(ctx context.Context, stack []uint64) error {
	c := &f.i.call
	prev := c.Context
	c.Context = ctx
	err := f.f.CallWithStack(c, stack)
	c.Context = prev
	if err != nil {
		err = convert(err)
		var exit *engine.ExitError
		if errors.As(err, &exit) {
			// As wazero's proc_exit does: later calls fail with the exit.
			_ = f.i.mod.CloseWithExitCode(ctx, exit.Code)
			return err
		}
		return f.i.stackOverflow(err)
	}
	return nil
}

// stackOverflow words a trap of FlagBudget's stack bound as wasmtime words
// its own: the bound's check traps with unreachable, which alone would send
// an author looking for a bug that is not there. The counter is below 0
// only when a function's entry took more than was left (interrupt's
// stack.go).
func (i *instance) stackOverflow(err error) error {
	g := i.mod.ExportedGlobal(interrupt.StackName)
	if g == nil || int32(g.Get()) >= 0 {
		return err
	}
	msg := err.Error()
	const unreachable = "wasm error: unreachable"
	if !strings.HasPrefix(msg, unreachable) {
		return err
	}
	return fmt.Errorf("wasm error: stack overflow (the call's frames exceed the %d MiB call stack bound)%s",
		interrupt.StackLimit>>20, strings.TrimPrefix(msg, unreachable))
}

// convert turns a WASI exit into *engine.ExitError; other errors are traps.
func convert(err error) error {
	var exit *engine.ExitError
	if errors.As(err, &exit) {
		return exit
	}
	var sysExit *sys.ExitError
	if errors.As(err, &sysExit) {
		return &engine.ExitError{Code: sysExit.ExitCode()}
	}
	return err
}
