// Package contenders runs benchprov through each plugin mechanism behind
// one interface, so every benchmark treats them alike. Every contender
// starts from machine-controller's typed objects, as a controller would call
// cloud.Provider, and pays its own mechanism's encoding.
package contenders

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"encoding/json"

	extism "github.com/extism/go-sdk"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/tetratelabs/wazero"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/bench/benchprov"
	"github.com/wasmprov/wasmprov/bench/internal/gp"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// Contender is benchprov behind one plugin mechanism.
type Contender interface {
	// Empty is the cheapest call the mechanism offers.
	Empty(ctx context.Context) error
	// Validate is cloud.Provider.Validate on spec.
	Validate(ctx context.Context, spec *clusterv1alpha1.MachineSpec) error
	// Create is cloud.Provider.Create on m: three loopback HTTP calls.
	Create(ctx context.Context, m *clusterv1alpha1.Machine) error
	Close() error
}

// Subprocess is implemented by contenders that run the provider in another
// process, whose CPU time and memory count too.
type Subprocess interface{ PID() int }

// Options configure a contender.
type Options struct {
	// CacheDir is the wazero compilation cache ("" = in-memory only).
	CacheDir string
	// Callers is how many concurrent callers the contender must serve
	// (pool size of the wasm contenders).
	Callers int
	// AllowedHost is the loopback "127.0.0.1:port" of the fake cloud.
	AllowedHost string
}

// ErrUnavailable is returned by contenders not built into this binary.
var ErrUnavailable = errors.New("contender not available in this build")

// Spec names a contender and builds it.
type Spec struct {
	Name string
	Desc string
	New  func(ctx context.Context, o Options) (Contender, error)
}

// Available reports whether the contender is built into this binary (New
// returns ErrUnavailable otherwise). The benchmarks that start a
// subprocess check it before building anything.
func (s Spec) Available() bool { return s.Name != "wasmtime" || newWasmtime != nil }

// All lists the contenders, in table order.
func All() []Spec {
	return []Spec{
		{"native", "benchprov compiled into the host (the limit)", func(context.Context, Options) (Contender, error) { return NewNative(), nil }},
		{"wasmprov", "wasmprov on wazero, defaults (interruptible guests)", func(ctx context.Context, o Options) (Contender, error) { return NewWasmprov(ctx, o, true) }},
		{"wasmprov-nointr", "wasmprov on wazero, WithInterruptibleGuests(false)", func(ctx context.Context, o Options) (Contender, error) { return NewWasmprov(ctx, o, false) }},
		{"wasmtime", "wasmprov on wasmtime (cgo, build tag wasmtime)", func(ctx context.Context, o Options) (Contender, error) {
			if newWasmtime == nil {
				return nil, ErrUnavailable
			}
			return newWasmtime(ctx, o)
		}},
		{"extism", "Extism go-sdk v1.7.1, Go guest with Extism's ABI", NewExtism},
		{"goplugin", "hashicorp/go-plugin v1.8.0, gRPC, subprocess", func(ctx context.Context, o Options) (Contender, error) { return NewGoPlugin(ctx) }},
	}
}

// Lookup returns the spec named name.
func Lookup(name string) (Spec, bool) {
	for _, s := range All() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// newWasmtime builds the wasmtime contender; it is set by wasmtime.go,
// which is compiled only with the build tag wasmtime (the runtime's wasmtime
// engine needs it, and cgo). Nil: the contender is unavailable.
var newWasmtime func(context.Context, Options) (Contender, error)

// hostTags are the build tags this binary was built with that the host
// binaries it builds (cmd/coldstart) need too, so a subprocess can run the
// same contenders.
var hostTags []string

// ---- native

// Native is benchprov compiled in: what machine-controller's providers do.
type Native struct{ client *http.Client }

// NewNative returns the native contender.
func NewNative() *Native {
	return &Native{client: &http.Client{Transport: http.DefaultTransport}}
}

func (n *Native) Empty(context.Context) error { return nil }

func (n *Native) Validate(_ context.Context, spec *clusterv1alpha1.MachineSpec) error {
	var raw []byte
	if spec.ProviderSpec.Value != nil {
		raw = spec.ProviderSpec.Value.Raw
	}
	return benchprov.Validate(raw)
}

func (n *Native) Create(ctx context.Context, m *clusterv1alpha1.Machine) error {
	_, err := benchprov.Create(ctx, n.client, m.Name, string(m.UID), m.Spec.ProviderSpec.Value.Raw)
	return err
}

func (n *Native) Close() error { return nil }

// ---- wasmprov

// Wasmprov is the benchprov guest loaded by wasmprov's runtime.
type Wasmprov struct {
	rt *runtime.Runtime
	p  *runtime.Provider
}

// NewWasmprov loads the benchprov guest on the wazero engine (the
// wasmtime column is its own contender).
func NewWasmprov(ctx context.Context, o Options, interruptible bool) (*Wasmprov, error) {
	return newWasmprov(ctx, o, runtime.WithEngine(runtime.EngineWazero), runtime.WithInterruptibleGuests(interruptible))
}

// NewWasmprovGuest loads the guest built from pkg (WasmprovGuest or a
// variant such as WasmprovGuestJSONHTTP) like the wasmprov contender
// (interruptible guests) on wazero, or like the wasmtime contender when
// wasmtime is set; that one is ErrUnavailable without -tags wasmtime.
func NewWasmprovGuest(ctx context.Context, o Options, pkg string, wasmtime bool) (*Wasmprov, error) {
	engine := runtime.EngineWazero
	if wasmtime {
		if newWasmtime == nil {
			return nil, ErrUnavailable
		}
		engine = runtime.EngineWasmtime
	}
	return newWasmprovGuest(ctx, o, pkg, runtime.WithEngine(engine), runtime.WithInterruptibleGuests(true))
}

// newWasmprov loads the benchprov guest with the runtime options extra
// (after the bench's own: logger, compilation cache).
func newWasmprov(ctx context.Context, o Options, extra ...runtime.Option) (*Wasmprov, error) {
	return newWasmprovGuest(ctx, o, WasmprovGuest, extra...)
}

func newWasmprovGuest(ctx context.Context, o Options, pkg string, extra ...runtime.Option) (*Wasmprov, error) {
	wasm, err := Build(pkg)
	if err != nil {
		return nil, err
	}
	opts := []runtime.Option{
		runtime.WithLogger(slog.New(slog.DiscardHandler)),
	}
	if o.CacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(o.CacheDir))
	}
	opts = append(opts, extra...)
	rt, err := runtime.New(opts...)
	if err != nil {
		return nil, err
	}
	pool := max(o.Callers, 1)
	p, err := rt.Load(ctx, wasm, runtime.WithName("benchprov"), runtime.WithPolicy(runtime.Policy{
		AllowedHosts:      allowed(o),
		AllowInsecureHTTP: true,
		PoolSize:          pool,
		Prewarm:           pool,
	}))
	if err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return &Wasmprov{rt: rt, p: p}, nil
}

func allowed(o Options) []string {
	if o.AllowedHost == "" {
		return nil
	}
	return []string{o.AllowedHost}
}

// Provider is the loaded provider.
func (w *Wasmprov) Provider() *runtime.Provider { return w.p }

// Empty is GetCloudConfig on an empty MachineSpec: the provider returns at
// once; what remains is the ABI path (pool, export call, the SDK pulling and
// decoding a near-empty spec, an empty result).
func (w *Wasmprov) Empty(ctx context.Context) error {
	_, _, err := w.p.GetCloudConfig(ctx, clusterv1alpha1.MachineSpec{}, nil)
	return err
}

func (w *Wasmprov) Validate(ctx context.Context, spec *clusterv1alpha1.MachineSpec) error {
	return w.p.Validate(ctx, *spec, nil)
}

func (w *Wasmprov) Create(ctx context.Context, m *clusterv1alpha1.Machine) error {
	_, err := w.p.Create(ctx, m, &provider.Data{}, "#cloud-config\n")
	return err
}

func (w *Wasmprov) Close() error { return w.rt.Close(context.Background()) }

// ---- Extism

// Extism is the Extism-ABI benchprov guest on Extism's go-sdk. A Plugin is
// not safe for concurrent use and the SDK has no pool, so this contender
// keeps one instance per caller.
type Extism struct {
	compiled *extism.CompiledPlugin
	free     chan *extism.Plugin
	mu       sync.Mutex
	all      []*extism.Plugin
}

// NewExtism compiles the Extism guest and creates one instance per caller.
func NewExtism(ctx context.Context, o Options) (Contender, error) {
	wasm, err := Build(ExtismGuest)
	if err != nil {
		return nil, err
	}
	rc := wazero.NewRuntimeConfig()
	if o.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
		if err != nil {
			return nil, err
		}
		rc = rc.WithCompilationCache(cache)
	}
	hosts := []string{"127.0.0.1"}
	compiled, err := extism.NewCompiledPlugin(ctx, extism.Manifest{
		Wasm:         []extism.Wasm{extism.WasmFile{Path: wasm}},
		AllowedHosts: hosts,
	}, extism.PluginConfig{EnableWasi: true, RuntimeConfig: rc}, nil)
	if err != nil {
		return nil, err
	}
	n := max(o.Callers, 1)
	e := &Extism{compiled: compiled, free: make(chan *extism.Plugin, n)}
	for range n {
		inst, err := compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
		if err != nil {
			_ = e.Close()
			return nil, err
		}
		// Run the guest's _initialize now, not in the first measured call.
		if _, _, err := inst.CallWithContext(ctx, "empty", nil); err != nil {
			_ = e.Close()
			return nil, err
		}
		e.all = append(e.all, inst)
		e.free <- inst
	}
	return e, nil
}

func (e *Extism) call(ctx context.Context, fn string, in []byte) ([]byte, error) {
	inst := <-e.free
	defer func() { e.free <- inst }()
	rc, out, err := inst.CallWithContext(ctx, fn, in)
	if err != nil {
		return nil, err
	}
	if rc != 0 {
		return nil, fmt.Errorf("%s returned %d", fn, rc)
	}
	return out, nil
}

func (e *Extism) Empty(ctx context.Context) error { _, err := e.call(ctx, "empty", nil); return err }

func (e *Extism) Validate(ctx context.Context, spec *clusterv1alpha1.MachineSpec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	_, err = e.call(ctx, "validate", b)
	return err
}

func (e *Extism) Create(ctx context.Context, m *clusterv1alpha1.Machine) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	out, err := e.call(ctx, "create", b)
	if err != nil {
		return err
	}
	var inst benchprov.Instance
	return json.Unmarshal(out, &inst)
}

func (e *Extism) Close() error {
	ctx := context.Background()
	for _, p := range e.all {
		_ = p.Close(ctx)
	}
	return e.compiled.Close(ctx)
}

// ---- hashicorp/go-plugin

// GoPlugin is benchprov in a go-plugin subprocess, called over gRPC.
type GoPlugin struct {
	client *plugin.Client
	p      gp.Provider
	pid    int
}

// NewGoPlugin builds the plugin binary and starts it.
func NewGoPlugin(context.Context) (Contender, error) {
	bin, err := Build(GoPluginBin)
	if err != nil {
		return nil, err
	}
	return StartGoPlugin(bin)
}

// StartGoPlugin starts the plugin binary bin.
func StartGoPlugin(bin string) (*GoPlugin, error) {
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  gp.Handshake,
		Plugins:          gp.PluginMap(nil),
		Cmd:              exec.Command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
		SyncStdout:       io.Discard,
		SyncStderr:       os.Stderr,
	})
	rpc, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, err
	}
	raw, err := rpc.Dispense("benchprov")
	if err != nil {
		c.Kill()
		return nil, err
	}
	g := &GoPlugin{client: c, p: raw.(gp.Provider)}
	if rc := c.ReattachConfig(); rc != nil {
		g.pid = rc.Pid
	}
	return g, nil
}

func (g *GoPlugin) PID() int { return g.pid }

func (g *GoPlugin) Empty(ctx context.Context) error { return g.p.Empty(ctx) }

func (g *GoPlugin) Validate(ctx context.Context, spec *clusterv1alpha1.MachineSpec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return g.p.Validate(ctx, b)
}

func (g *GoPlugin) Create(ctx context.Context, m *clusterv1alpha1.Machine) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	out, err := g.p.Create(ctx, b)
	if err != nil {
		return err
	}
	var inst benchprov.Instance
	return json.Unmarshal(out, &inst)
}

func (g *GoPlugin) Close() error { g.client.Kill(); return nil }

// CompilationCacheDir is a compilation cache directory under CacheDir
// (wazero's files; wasmtime keeps its own in a wasmtime-go-v37.0.0
// subdirectory).
func CompilationCacheDir(name string) string { return filepath.Join(CacheDir(), "wazero-"+name) }
