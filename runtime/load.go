package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/pool"
)

// LoadOption configures Load and LoadBytes.
type LoadOption func(*loadConfig)

type loadConfig struct {
	name   string
	policy *Policy
}

// WithName names the provider (default: the file name without ".wasm").
func WithName(name string) LoadOption { return func(c *loadConfig) { c.name = name } }

// WithPolicy sets the provider's policy (default: the runtime's default).
func WithPolicy(p Policy) LoadOption { return func(c *loadConfig) { c.policy = &p } }

// Load reads, validates and prepares the provider module at path. When it
// returns, the module is compiled and its first instance is running, so the
// first call pays no start-up cost.
func (r *Runtime) Load(ctx context.Context, path string, opts ...LoadOption) (*Provider, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading provider: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	return r.LoadBytes(ctx, name, wasm, opts...)
}

// LoadBytes is Load for a module already in memory.
func (r *Runtime) LoadBytes(ctx context.Context, name string, wasm []byte, opts ...LoadOption) (*Provider, error) {
	lc := loadConfig{name: name}
	for _, o := range opts {
		o(&lc)
	}
	policy := r.cfg.defaultPolicy
	if lc.policy != nil {
		policy = *lc.policy
	}
	p, err := r.load(ctx, lc.name, wasm, policy.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", lc.name, err)
	}
	r.track(p)
	return p, nil
}

func digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

func (r *Runtime) load(ctx context.Context, name string, wasm []byte, policy Policy) (p *Provider, err error) {
	sum, size := digest(wasm), len(wasm) // of the module as shipped, not as instrumented
	if policy.SHA256 != "" && !strings.EqualFold(policy.SHA256, sum) {
		return nil, fmt.Errorf("%w: sha256 %s does not match the pinned %s", ErrInvalidModule, sum, policy.SHA256)
	}
	if r.cfg.interruptible {
		// Deadlines through a flag checked at loops and calls, far cheaper
		// than WithCloseOnContextDone (see interrupt.go).
		if wasm, err = interrupt.Instrument(wasm); err != nil {
			return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", ErrInvalidModule, err)
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithMemoryLimitPages(policy.MemoryLimitMiB * 16). // 64 KiB pages
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
	if _, err := hostfuncs.Instantiate(ctx, wr); err != nil {
		return nil, err
	}
	compiled, err := wr.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %v", ErrInvalidModule, err)
	}
	defer func() {
		if err != nil { // the shared compilation cache would keep it
			_ = compiled.Close(context.WithoutCancel(ctx))
		}
	}()
	if problems := validate(compiled); len(problems) > 0 {
		return nil, fmt.Errorf("%w:\n  - %s", ErrInvalidModule, strings.Join(problems, "\n  - "))
	}

	logger := r.cfg.logger.With("provider", name)
	p = &Provider{
		name:     name,
		rt:       r,
		wr:       wr,
		compiled: compiled,
		policy:   policy,
		digest:   sum,
		size:     size,
		logger:   logger,
	}
	// A first instance, with no clock or randomness, tells the ABI version
	// and what the module declares; only then can instances be configured
	// with what is granted.
	probe, err := p.instantiate(ctx, p.moduleConfig(0))
	if err != nil {
		return nil, err
	}
	declared := probe.declared
	if declared&^abi.AllCapabilities != 0 {
		_ = probe.Close(ctx)
		return nil, fmt.Errorf("%w: declares unknown capability bits %#x (built for a newer ABI?)", ErrInvalidModule, uint64(declared&^abi.AllCapabilities))
	}
	granted, err := policy.grant(declared)
	if err != nil {
		_ = probe.Close(ctx)
		return nil, err
	}
	if refused := declared &^ granted; refused != 0 {
		logger.Warn("policy refuses capabilities the module declares; calls needing them will fail",
			"refused", refused.Names())
	}
	p.declared, p.granted = declared, granted
	p.modCfg = p.moduleConfig(granted)
	p.env = r.newEnv(name, logger, policy)
	p.pool = pool.New(policy.PoolSize, func(ctx context.Context) (*guestInstance, error) {
		return p.instantiate(ctx, p.modCfg)
	})
	// The probe has the final configuration unless clocks or randomness
	// were granted: then it is replaced.
	if granted&(abi.CapClock|abi.CapRandom) != 0 || !p.pool.Adopt(probe) {
		_ = probe.Close(ctx)
	}
	if err := p.pool.Warm(ctx, policy.Prewarm); err != nil {
		_ = p.pool.Close(ctx)
		return nil, fmt.Errorf("pre-warming instances: %w", err)
	}
	logger.Info("provider loaded", "sha256", sum, "size", size,
		"capabilities", granted.Names(), "pool", policy.PoolSize)
	return p, nil
}

// newEnv builds what the host functions of a provider may use.
func (r *Runtime) newEnv(name string, logger *slog.Logger, policy Policy) *hostfuncs.Env {
	return &hostfuncs.Env{
		Provider: name,
		Logger:   logger,
		HTTP: hostfuncs.HTTPPolicy{
			AllowedHosts:     policy.AllowedHosts,
			AllowInsecure:    policy.AllowInsecureHTTP,
			MaxResponseBytes: policy.MaxHTTPResponseBytes,
			Client:           r.cfg.httpClient,

			AllowInternalHosts:  policy.AllowInternalHosts,
			MaxRequestBodyBytes: policy.MaxHTTPRequestBytes,
			MaxRedirects:        policy.MaxHTTPRedirects,
			Timeout:             time.Duration(policy.HTTPTimeout),
		},
		ConfigVar: hostfuncs.ConfigVarSource{Client: r.cfg.kube, AllowedEnv: policy.AllowedEnv},
	}
}

// moduleConfig is the WASI view the guest gets: no arguments, no
// environment (but GOGC, which keeps a Go guest's heap small), no
// filesystem, no sockets; real clocks and randomness only when granted.
// stdout and stderr are added per instance by instantiate.
func (p *Provider) moduleConfig(granted abi.Capability) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // instantiate runs _initialize, under the deadline
		WithEnv("GOGC", "50")
	if granted.Has(abi.CapClock) {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	if granted.Has(abi.CapRandom) {
		cfg = cfg.WithRandSource(rand.Reader)
	}
	return cfg
}

type signature struct{ params, results []api.ValueType }

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// requiredExports are the function exports of ABI v1.
func requiredExports() map[string]signature {
	want := map[string]signature{
		abi.ExportABIVersion:   {nil, []api.ValueType{i32}},
		abi.ExportCapabilities: {nil, []api.ValueType{i64}},
	}
	for _, m := range abi.Methods {
		want[m.Export()] = signature{nil, []api.ValueType{i32}}
	}
	return want
}

// validate checks a compiled module against the ABI and returns every
// problem found, so an author fixes them in one round.
func validate(m wazero.CompiledModule) []string {
	var problems []string
	exports := m.ExportedFunctions()
	want := requiredExports()
	for _, name := range sortedKeys(want) {
		w := want[name]
		def, ok := exports[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing export %q %s", name, w))
			continue
		}
		if got := (signature{def.ParamTypes(), def.ResultTypes()}); !got.equal(w) {
			problems = append(problems, fmt.Sprintf("export %q has signature %s, want %s", name, got, w))
		}
	}
	if def, ok := exports[abi.ExportInitialize]; ok && (len(def.ParamTypes()) != 0 || len(def.ResultTypes()) != 0) {
		problems = append(problems, fmt.Sprintf("export %q must take and return nothing", abi.ExportInitialize))
	}
	if _, ok := m.ExportedMemories()[abi.ExportMemory]; !ok {
		problems = append(problems, `missing memory export "memory"`)
	}
	hostSigs := hostfuncs.Signatures()
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		got := signature{def.ParamTypes(), def.ResultTypes()}
		switch mod {
		case abi.ModuleName:
			w, ok := hostSigs[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("imports unknown host function %s.%s", mod, name))
			} else if want := (signature{w[0], w[1]}); !got.equal(want) {
				problems = append(problems, fmt.Sprintf("import %s.%s has signature %s, want %s", mod, name, got, want))
			}
		case wasi_snapshot_preview1.ModuleName:
			// Served by wazero's WASI; unknown names fail at instantiation.
		default:
			if strings.HasPrefix(mod, "wasmprov_v") {
				problems = append(problems, fmt.Sprintf("imports %s.%s: this host implements ABI %s only", mod, name, abi.ModuleName))
			} else {
				problems = append(problems, fmt.Sprintf("imports %s.%s from unknown module %q", mod, name, mod))
			}
		}
	}
	return problems
}

func (s signature) equal(o signature) bool {
	return slices.Equal(s.params, o.params) && slices.Equal(s.results, o.results)
}

func (s signature) String() string {
	var b strings.Builder
	b.WriteString("(func")
	for _, t := range s.params {
		b.WriteString(" (param " + api.ValueTypeName(t) + ")")
	}
	for _, t := range s.results {
		b.WriteString(" (result " + api.ValueTypeName(t) + ")")
	}
	b.WriteString(")")
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// instantiate creates an instance, checks its ABI version and looks its
// exports up once (a lookup costs microseconds; a call, nanoseconds).
func (p *Provider) instantiate(ctx context.Context, cfg wazero.ModuleConfig) (*guestInstance, error) {
	// Each instance writes to logs of its own, so the output cap of one
	// flooding instance does not silence the others.
	cfg = cfg.WithStdout(newGuestOutput(p.logger, slog.LevelInfo, "stdout")).
		WithStderr(newGuestOutput(p.logger, slog.LevelWarn, "stderr"))
	mod, err := p.wr.InstantiateModule(ctx, p.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiating module: %w", classifyInstantiate(err))
	}
	inst := &guestInstance{mod: mod}
	inst.flag, _ = mod.ExportedGlobal(interrupt.GlobalName).(api.MutableGlobal)
	fail := func(err error) (*guestInstance, error) {
		_ = mod.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if init := mod.ExportedFunction(abi.ExportInitialize); init != nil {
		if err := inst.guard(ctx, func() error { return init.CallWithStack(ctx, nil) }); err != nil {
			return fail(fmt.Errorf("instantiating module: %s: %w", abi.ExportInitialize, classifyInstantiate(err)))
		}
	}
	if err := inst.guard(ctx, func() error { return mod.ExportedFunction(abi.ExportABIVersion).CallWithStack(ctx, inst.stack[:]) }); err != nil {
		return fail(fmt.Errorf("%s: %w", abi.ExportABIVersion, err))
	}
	if v := int32(uint32(inst.stack[0])); v != abi.Version {
		return fail(fmt.Errorf("%w: module implements ABI version %d, this host implements version %d", ErrInvalidModule, v, abi.Version))
	}
	if err := inst.guard(ctx, func() error { return mod.ExportedFunction(abi.ExportCapabilities).CallWithStack(ctx, inst.stack[:]) }); err != nil {
		return fail(fmt.Errorf("%s: %w", abi.ExportCapabilities, err))
	}
	inst.declared = abi.Capability(inst.stack[0])
	for _, m := range abi.Methods {
		inst.fns[m] = mod.ExportedFunction(m.Export())
	}
	return inst, nil
}

func classifyInstantiate(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrTrap, err)
}
