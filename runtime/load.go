package runtime

import (
	"context"
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

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostalias"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/pool"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
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
// first call pays no start-up cost — unless the policy is lazy (an
// IdleTimeout without Prewarm): then loading closes the instance it started
// to read the module's ABI version and capabilities, and the first call
// starts one.
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

// digestOf is wasm's SHA-256 as load needs it: hex for the policy's pin
// and the provider, raw for the engine, which keys the instrumented cache
// by it (one hash of an 11 MB module per load, not two).
func digestOf(wasm []byte) (hexSum string, raw [sha256.Size]byte) {
	raw = sha256.Sum256(wasm)
	return hex.EncodeToString(raw[:]), raw
}

func (r *Runtime) load(ctx context.Context, name string, wasm []byte, policy Policy) (p *Provider, err error) {
	// Nothing in loading may run without end: compiling honours the
	// deadline between functions, and every guest export run here is
	// interrupted at it.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(policy.LoadTimeout))
	defer cancel()
	sum, rawSum := digestOf(wasm) // of the module as shipped, not as instrumented
	size := len(wasm)
	if policy.SHA256 != "" && !strings.EqualFold(policy.SHA256, sum) {
		return nil, fmt.Errorf("%w: sha256 %s does not match the pinned %s", ErrInvalidModule, sum, policy.SHA256)
	}
	aliases, err := hostalias.Parse(policy.HostAliases)
	if err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if err := r.host.checkCapabilityNames(policy); err != nil {
		return nil, fmt.Errorf("invalid policy: %w", err)
	}
	if err := checkMetadata(wasm); err != nil {
		return nil, err
	}
	mod, err := r.compileDigest(ctx, wasm, rawSum, policy)
	if err != nil {
		return nil, loadDeadline(ctx, "compiling", err)
	}
	defer func() {
		if err != nil {
			_ = mod.Close(context.WithoutCancel(ctx))
		}
	}()
	if problems := validate(mod, r.host); len(problems) > 0 {
		return nil, fmt.Errorf("%w:\n  - %s", ErrInvalidModule, strings.Join(problems, "\n  - "))
	}
	customGranted, err := grantCustom(policy, r.host.customImports(mod))
	if err != nil {
		return nil, err
	}

	logger := r.cfg.logger.With("provider", name)
	p = &Provider{
		name:   name,
		rt:     r,
		mod:    mod,
		policy: policy,
		digest: sum,
		size:   size,
		logger: logger,
	}
	// A first instance, with no clock or randomness, tells the ABI version
	// and what the module declares; only then can instances be configured
	// with what is granted.
	probe, err := p.instantiate(ctx, moduleConfig(0))
	if err != nil {
		return nil, err
	}
	declared := probe.declared
	if err := checkDeclared(declared); err != nil {
		_ = probe.Close(ctx)
		return nil, err
	}
	granted, err := policy.grant(declared)
	if err != nil {
		_ = probe.Close(ctx)
		return nil, err
	}
	// What the probe read is what `inspect -run` calls the exports for:
	// kept, with the precheck verdict, for a later static inspect of the
	// same bytes (nothing is written when the entry already says so).
	r.remember(&ModuleInfo{SHA256: sum, ABIVersion: abi.Version, ABIVersionFrom: FromExportCall,
		Declared: declared, DeclaredFrom: FromExportCall}, loadLimits(policy).Key(), r.cachedEntry(sum))
	if refused := declared &^ granted; refused != 0 {
		logger.Warn("policy refuses capabilities the module declares; calls needing them will fail",
			"refused", refused.Names())
	}
	p.declared, p.granted = declared, granted
	p.hasMetrics = probe.fns[abi.MethodSetMetricsForMachines] != nil
	p.modCfg = moduleConfig(granted)
	p.env = r.newEnv(name, logger, policy, aliases)
	p.env.CustomGranted = customGranted
	p.pool = pool.New(policy.PoolSize, func(ctx context.Context) (*guestInstance, error) {
		return p.instantiate(ctx, p.modCfg)
	}, pool.WithIdleTimeout(context.WithoutCancel(ctx), time.Duration(policy.IdleTimeout)))
	// The probe has the final configuration unless the clock was granted:
	// then it is replaced. A lazy provider (Prewarm 0, with an
	// IdleTimeout) keeps no instance from loading.
	if policy.Prewarm < 1 || granted.Has(abi.CapClock) || !p.pool.Adopt(probe) {
		_ = probe.Close(ctx)
	}
	if err := p.pool.Warm(ctx, policy.Prewarm); err != nil {
		_ = p.pool.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pre-warming instances: %w", err)
	}
	logger.Info("provider loaded", "engine", r.engine.Name(), "sha256", sum, "size", size,
		"capabilities", append(granted.Names(), sortedKeys(customGranted)...), "pool", policy.PoolSize)
	return p, nil
}

// newEnv builds what the host functions of a provider version may use,
// its HTTP transport included: built once here, shared by every call of
// the version, and closed by Provider.Close.
//
// Host aliases are logged once here: an operator reading the logs must be
// able to tell that a provider's API calls go to a simulator.
func (r *Runtime) newEnv(name string, logger *slog.Logger, policy Policy, aliases hostalias.Aliases) *hostmodule.Env {
	if len(aliases) > 0 {
		logger.Info("HTTP host aliases: requests to these hosts go to loopback", "aliases", aliases.List())
	}
	return &hostmodule.Env{
		Provider: name,
		Logger:   logger,
		HTTP: hostmodule.NewHTTP(hostmodule.HTTPPolicy{
			AllowedHosts:     policy.AllowedHosts,
			AllowInsecure:    policy.AllowInsecureHTTP,
			MaxResponseBytes: policy.MaxHTTPResponseBytes,
			WrapTransport:    r.cfg.wrapTransport,

			AllowInternalHosts:  policy.AllowInternalHosts,
			MaxRequestBodyBytes: policy.MaxHTTPRequestBytes,
			MaxRedirects:        policy.MaxHTTPRedirects,
			Timeout:             time.Duration(policy.HTTPTimeout),
			Limiter:             r.limiter(name, policy),
		}.WithHostAliases(aliases)),
		ConfigVar: hostmodule.ConfigVarSource{Client: r.cfg.kube, AllowedEnv: policy.AllowedEnv,
			AllowedNamespaces: policy.AllowedSecretNamespaces},
	}
}

// compile checks wasm against the host's limits (package precheck: before
// any compiler or the instrumenter sees it, so a compile bomb is refused in
// microseconds instead of taking minutes and gigabytes) and compiles it on
// the runtime's engine with the policy's memory limit and the wasmprov_v1
// host functions.
func (r *Runtime) compile(ctx context.Context, wasm []byte, policy Policy) (engine.Module, error) {
	return r.compileDigest(ctx, wasm, sha256.Sum256(wasm), policy)
}

// loadLimits are the limits Load's precheck applies under policy (and
// that a static inspect checks, or finds already checked in the result
// cache under their Key).
func loadLimits(policy Policy) precheck.Limits {
	return precheck.Limits{MaxTableEntries: int(policy.MaxTableEntries)}
}

// compileDigest is compile for a module whose SHA-256 the caller has. The
// engine runs the precheck (engine.ModuleConfig.Check) first thing, unless
// its instrumented cache holds the module checked against the same limits
// (CheckKey): a warm load does not check again what it checked when it
// wrote the cache, and only modules that passed are written there.
func (r *Runtime) compileDigest(ctx context.Context, wasm []byte, sum [sha256.Size]byte, policy Policy) (engine.Module, error) {
	limits := loadLimits(policy)
	// The engines wrap ErrInvalidModule themselves (it is
	// engine.ErrInvalidModule), so their error passes through unchanged.
	return r.engine.Compile(ctx, wasm, engine.ModuleConfig{
		MemoryLimitPages: policy.MemoryLimitMiB * 16, // 64 KiB pages
		Interruptible:    r.cfg.interruptible,
		HostFunctions:    r.host.fns,
		Digest:           sum,
		Check:            func(wasm []byte) ([]byte, error) { return prechecked(wasm, limits) },
		CheckKey:         limits.Key(),
	})
}

// prechecked is precheck.Check with the runtime's errors.
func prechecked(wasm []byte, limits precheck.Limits) ([]byte, error) {
	wasm, err := precheck.Check(wasm, limits)
	switch {
	case errors.Is(err, precheck.ErrMalformed):
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %w", ErrInvalidModule, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	return wasm, nil
}

// moduleConfig is the WASI view the guest gets: no arguments, no
// environment (but GOGC, which keeps a Go guest's heap small), no
// filesystem, no sockets; real clocks and randomness only when granted.
// stdout and stderr are added per instance by instantiate.
func moduleConfig(granted abi.Capability) engine.InstanceConfig {
	return engine.InstanceConfig{
		Env:   []string{"GOGC=50"},
		Clock: granted.Has(abi.CapClock),
	}
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
func (p *Provider) instantiate(ctx context.Context, cfg engine.InstanceConfig) (*guestInstance, error) {
	// An instance the pool starts for a call is bounded like one started at
	// load: a guest whose _initialize loops only later (it may read the
	// clock) must not hang a call without a deadline.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.policy.LoadTimeout))
	defer cancel()
	inst, err := p.startInstance(ctx, cfg)
	return inst, loadDeadline(ctx, "starting an instance", err)
}

func (p *Provider) startInstance(ctx context.Context, cfg engine.InstanceConfig) (*guestInstance, error) {
	// Each instance writes to logs of its own, so the output cap of one
	// flooding instance does not silence the others.
	cfg.Stdout = newGuestOutput(p.logger, slog.LevelInfo, "stdout")
	cfg.Stderr = newGuestOutput(p.logger, slog.LevelWarn, "stderr")
	ei, err := p.mod.Instantiate(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiating module: %w", classifyInstantiate(err))
	}
	inst := &guestInstance{inst: ei}
	fail := func(err error) (*guestInstance, error) {
		_ = ei.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if init := ei.Function(abi.ExportInitialize); init != nil {
		if err := inst.guard(ctx, func() error { return init.Call(ctx, nil) }); err != nil {
			return fail(fmt.Errorf("instantiating module: %s: %w", abi.ExportInitialize, classifyInstantiate(err)))
		}
	}
	if err := inst.guard(ctx, func() error { return ei.Function(abi.ExportABIVersion).Call(ctx, inst.stack[:]) }); err != nil {
		return fail(fmt.Errorf("%s: %w", abi.ExportABIVersion, err))
	}
	if err := checkABIVersion(int32(uint32(inst.stack[0]))); err != nil {
		return fail(err)
	}
	if err := inst.guard(ctx, func() error { return ei.Function(abi.ExportCapabilities).Call(ctx, inst.stack[:]) }); err != nil {
		return fail(fmt.Errorf("%s: %w", abi.ExportCapabilities, err))
	}
	inst.declared = abi.Capability(inst.stack[0])
	for _, m := range abi.Methods {
		inst.fns[m] = ei.Function(m.Export())
	}
	for _, m := range abi.OptionalMethods {
		inst.fns[m] = ei.Function(m.Export()) // nil when not exported
	}
	return inst, nil
}

func classifyInstantiate(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTrap, engineTrap{err})
}
