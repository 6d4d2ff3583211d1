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
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/instrumented"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/memimage"
	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
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
