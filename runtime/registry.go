package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"k8s.io/apimachinery/pkg/types"
)

// Registry errors.
var (
	// ErrProviderNotFound: no provider of that name is loaded. It is not
	// cloud/errors.ErrInstanceNotFound: a missing provider says nothing
	// about the instance, so a controller must retry, never treat the
	// Machine's instance as gone.
	ErrProviderNotFound = errors.New("provider not found")
	// ErrDuplicateProvider: a provider of that name already comes from
	// another source (another directory, or code).
	ErrDuplicateProvider = errors.New("provider name already in use")
	// ErrSmokeTest: a new version failed its smoke call and was rejected.
	ErrSmokeTest = errors.New("smoke call failed")
	// ErrRegistryClosed: the registry was closed.
	ErrRegistryClosed = errors.New("registry is closed")
)

// SmokeTest exercises a freshly loaded version before it may serve calls.
// An error rejects the version; the previous one keeps serving.
type SmokeTest func(ctx context.Context, p cloud.ContextProvider) error

// DefaultSmokeTest calls AddDefaults with an empty MachineSpec — a method
// every provider implements without touching a cloud — and fails only if
// the sandbox failed: a trap, a panic, a timeout or an answer the ABI does
// not allow. The provider's own verdict (most refuse an empty spec) is fine.
func DefaultSmokeTest(ctx context.Context, p cloud.ContextProvider) error {
	_, err := p.AddDefaults(ctx, clusterv1alpha1.MachineSpec{})
	switch ErrorClass(err) {
	case ClassTrap, ClassTimeout, ClassCanceled, ClassBadResult:
		return err
	}
	if err != nil && ErrorClass(err) == "" {
		return err
	}
	return nil
}

// EventKind says what happened to a provider in a Registry.
type EventKind string

// Event kinds.
const (
	// EventLoaded: a provider was loaded for the first time (or again after
	// it had been removed).
	EventLoaded EventKind = "loaded"
	// EventReloaded: a new version replaced the serving one.
	EventReloaded EventKind = "reloaded"
	// EventRejected: a new version was refused (unreadable, corrupt, wrong
	// ABI, digest pin, bad policy, failed smoke call, duplicate name); the
	// previous version, if any, keeps serving.
	EventRejected EventKind = "rejected"
	// EventUnloaded: the provider was removed; calls already running finish.
	EventUnloaded EventKind = "unloaded"
	// EventDrained: a replaced or removed version finished its last call
	// and was closed; its compiled module and memory are released.
	EventDrained EventKind = "drained"
	// EventWatchError: the directory watch reported a problem (the directory
	// disappeared, an fsnotify error). Providers keep serving.
	EventWatchError EventKind = "watch-error"
)

// Event is what the Registry tells the embedding program (see
// WithEventHandler).
type Event struct {
	Kind     EventKind
	Provider string // empty for directory-level watch errors
	Source   string // file path, "fs:<name>" or "code"
	// SHA256 is the digest of the version the event is about (the new
	// version for loaded/reloaded/rejected, the old one for drained and
	// unloaded); empty when the module could not be read.
	SHA256    string
	OldSHA256 string        // the version replaced (reloaded) or kept serving (rejected)
	Err       error         // why (rejected, watch-error, drained with a timeout)
	Duration  time.Duration // read→swap for loads, swap→closed for drained
	Time      time.Time
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*registryConfig)

type registryConfig struct {
	logger        *slog.Logger
	onEvent       func(Event)
	debounce      time.Duration
	smoke         SmokeTest
	smokeTimeout  time.Duration
	drainTimeout  time.Duration
	dirPoll       time.Duration
	readFile      func(string) ([]byte, error)
	prewarmToLoad bool
}

// WithRegistryLogger sets the registry's logger (default: slog.Default()).
func WithRegistryLogger(l *slog.Logger) RegistryOption {
	return func(c *registryConfig) { c.logger = l }
}

// WithEventHandler installs fn, called for every Event. It runs on the
// registry's goroutines: it must be quick and must not call back into the
// registry's loading methods.
func WithEventHandler(fn func(Event)) RegistryOption {
	return func(c *registryConfig) { c.onEvent = fn }
}

// WithDebounce sets how long the watch waits for a file to stay quiet
// before loading it (default 150ms).
func WithDebounce(d time.Duration) RegistryOption { return func(c *registryConfig) { c.debounce = d } }

// WithSmokeTest replaces DefaultSmokeTest; nil disables the smoke call.
func WithSmokeTest(t SmokeTest) RegistryOption { return func(c *registryConfig) { c.smoke = t } }

// WithSmokeTimeout bounds the smoke call (default 10s). A module whose
// smoke call hangs is interrupted and rejected.
func WithSmokeTimeout(d time.Duration) RegistryOption {
	return func(c *registryConfig) { c.smokeTimeout = d }
}

// WithDrainTimeout bounds how long a replaced version may finish its calls
// before it is closed anyway (default: its policy's call timeout plus 10s,
// so no call that respects its deadline is cut short).
func WithDrainTimeout(d time.Duration) RegistryOption {
	return func(c *registryConfig) { c.drainTimeout = d }
}

// WithDirPollInterval sets how often a watched directory that disappeared
// is looked for again (default 1s).
func WithDirPollInterval(d time.Duration) RegistryOption {
	return func(c *registryConfig) { c.dirPoll = d }
}

// WithPrewarmToLoad controls whether a new version is pre-warmed with as
// many instances as the version it replaces has live (capped by its pool
// size), so a swap under load makes no caller wait for an instantiation
// (default true).
func WithPrewarmToLoad(on bool) RegistryOption {
	return func(c *registryConfig) { c.prewarmToLoad = on }
}

// Registry serves providers by name, loaded from directories and from code,
// and replaces them while they serve: a new version is compiled, validated,
// smoke-tested and pre-warmed off the call path, then swapped in atomically.
// Calls already running finish on the old version, which is then closed. A
// version that fails any step is rejected and the old one keeps serving.
//
// Holders of a *Handle (from Get) always call the current version.
type Registry struct {
	rt  *Runtime
	cfg registryConfig

	mu      sync.Mutex
	entries map[string]*entry
	dirs    []string
	closed  bool
	wg      sync.WaitGroup // syncs and drains in progress
	stopW   context.CancelFunc
}

// sourceKind says where an entry's module comes from.
type sourceKind int

const (
	fromDir sourceKind = iota + 1
	fromFS
	fromBytes
)

type source struct {
	kind   sourceKind
	dir    string
	fsys   fs.FS
	wasm   []byte
	policy *Policy
}

func (s source) String(name string) string {
	switch s.kind {
	case fromDir:
		return filepath.Join(s.dir, name+".wasm")
	case fromFS:
		return "fs:" + name + ".wasm"
	}
	return "code"
}

func (s source) same(o source) bool {
	switch {
	case s.kind != o.kind:
		return false
	case s.kind == fromDir:
		return s.dir == o.dir
	}
	return false
}

// entry is one provider name. It outlives removals (cur == nil) so that a
// Handle keeps working when the provider comes back.
type entry struct {
	name   string
	cur    atomic.Pointer[Provider]
	loadMu sync.Mutex // serialises loads of this name
	handle *Handle

	// guarded by Registry.mu
	src source

	// guarded by loadMu
	key         string // content key of the serving version
	rejectedKey string
	rejectedErr error

	st entryStats
}

type entryStats struct {
	mu            sync.Mutex
	draining      map[*Provider]struct{}
	retiredCreate int64
	retiredDisc   int64
	reloadsOK     int64
	reloadsFailed int64
	loadedAt      time.Time
	lastErr       string
	lastErrAt     time.Time
}

// NewRegistry returns an empty Registry loading providers with rt.
func NewRegistry(rt *Runtime, opts ...RegistryOption) *Registry {
	cfg := registryConfig{
		logger:        slog.Default(),
		debounce:      150 * time.Millisecond,
		smoke:         DefaultSmokeTest,
		smokeTimeout:  10 * time.Second,
		dirPoll:       time.Second,
		readFile:      os.ReadFile,
		prewarmToLoad: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &Registry{rt: rt, cfg: cfg, entries: map[string]*entry{}}
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9_.-]*[a-z0-9])?$`)

// ValidProviderName reports whether name may name a provider: lower-case
// letters, digits, '-', '_' and '.', starting and ending with a letter or
// digit (machine-controller's provider names are lower case).
func ValidProviderName(name string) bool { return len(name) <= 63 && nameRE.MatchString(name) }

// LoadDir loads every "<name>.wasm" in dir, each with its optional
// "<name>.yaml" policy, and remembers dir for ReloadAll and Watch. A module
// that fails to load does not stop the others: the error joins every
// failure, and the good providers serve.
func (r *Registry) LoadDir(ctx context.Context, dir string) error {
	dir = filepath.Clean(dir)
	names, err := listDir(dir)
	if err != nil {
		return fmt.Errorf("provider directory: %w", err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrRegistryClosed
	}
	if !slices.Contains(r.dirs, dir) {
		r.dirs = append(r.dirs, dir)
	}
	r.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := r.syncDirName(ctx, dir, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listDir returns the provider names of the "<name>.wasm" files in dir.
func listDir(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if name, ok := strings.CutSuffix(de.Name(), ".wasm"); ok && ValidProviderName(name) && !de.IsDir() {
			names = append(names, name)
		}
	}
	return names, nil
}

// Register loads (or hot-replaces) the provider name from a module in
// memory. policy nil means the runtime's default policy.
func (r *Registry) Register(ctx context.Context, name string, wasm []byte, policy *Policy) error {
	return r.register(ctx, name, source{kind: fromBytes, wasm: slices.Clone(wasm), policy: policy})
}

// RegisterFS loads (or hot-replaces) the provider name from "<name>.wasm"
// and the optional "<name>.yaml" in fsys; Reload reads them again.
func (r *Registry) RegisterFS(ctx context.Context, fsys fs.FS, name string) error {
	return r.register(ctx, name, source{kind: fromFS, fsys: fsys})
}

func (r *Registry) register(ctx context.Context, name string, src source) error {
	e, err := r.claim(name, src, true)
	if err != nil {
		r.reject(e, name, src, "", err, time.Now())
		return err
	}
	return r.sync(ctx, e)
}

// Unregister removes the provider name, whatever its source: new calls
// fail with ErrProviderNotFound, calls running finish, then the version is
// closed. A provider from a watched directory comes back if its file
// changes.
func (r *Registry) Unregister(name string) error {
	r.mu.Lock()
	e, ok := r.entries[name]
	r.mu.Unlock()
	if !ok || e.cur.Load() == nil {
		return fmt.Errorf("%w: %q", ErrProviderNotFound, name)
	}
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	r.unload(e, "unregistered")
	return nil
}

// claim returns the entry for name, creating it, and checks that src may
// provide it: a name comes from one source at a time. replace lets code
// take over a name from code (Register twice is a hot swap).
func (r *Registry) claim(name string, src source, replace bool) (*entry, error) {
	if !ValidProviderName(name) {
		return nil, fmt.Errorf("invalid provider name %q", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrRegistryClosed
	}
	e, ok := r.entries[name]
	if !ok {
		e = &entry{name: name, src: src}
		e.handle = &Handle{r: r, e: e}
		r.entries[name] = e
		return e, nil
	}
	switch {
	case e.src.same(src):
	case e.cur.Load() == nil: // a tombstone: any source may take it
		e.src = src
	case replace && e.src.kind != fromDir && src.kind != fromDir:
		e.src = src
	default:
		return e, fmt.Errorf("%w: %q is already provided by %s, refusing %s",
			ErrDuplicateProvider, name, e.src.String(name), src.String(name))
	}
	return e, nil
}

func (r *Registry) syncDirName(ctx context.Context, dir, name string) error {
	src := source{kind: fromDir, dir: dir}
	e, err := r.claim(name, src, false)
	if err != nil {
		if e != nil {
			r.reject(e, name, src, "", err, time.Now())
		}
		return err
	}
	return r.sync(ctx, e)
}

// Get returns the provider name, like machine-controller's
// cloudprovider.ForProvider. The handle routes every call to the version
// serving at that moment, so holding it across reloads is right. The error
// wraps ErrProviderNotFound.
func (r *Registry) Get(name string) (*Handle, error) {
	r.mu.Lock()
	e, ok := r.entries[name]
	r.mu.Unlock()
	if !ok || e.cur.Load() == nil {
		return nil, fmt.Errorf("%w: %q", ErrProviderNotFound, name)
	}
	return e.handle, nil
}

// Names returns the names of the providers loaded, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n, e := range r.entries {
		if e.cur.Load() != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Reload reads the provider name from its source again and swaps it in if
// it changed. Unchanged content (module and policy) is a no-op; content
// already rejected is rejected again without another attempt. For a
// directory provider whose file is gone, Reload unloads it.
func (r *Registry) Reload(ctx context.Context, name string) error {
	r.mu.Lock()
	e, ok := r.entries[name]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrProviderNotFound, name)
	}
	return r.sync(ctx, e)
}

// ReloadAll rescans the directories (loading new files, unloading removed
// ones) and reloads every provider.
func (r *Registry) ReloadAll(ctx context.Context) error {
	r.mu.Lock()
	dirs := slices.Clone(r.dirs)
	var others []*entry
	for _, e := range r.entries {
		if e.src.kind != fromDir || !slices.Contains(dirs, e.src.dir) {
			others = append(others, e)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, dir := range dirs {
		if err := r.rescanDir(ctx, dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range others {
		if err := r.sync(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Registry) rescanDir(ctx context.Context, dir string) error {
	names, err := listDir(dir)
	if err != nil {
		r.cfg.logger.Error("cannot read provider directory; providers keep serving their last good version",
			"dir", dir, "error", err)
		return fmt.Errorf("provider directory: %w", err)
	}
	r.mu.Lock()
	for n, e := range r.entries {
		if e.src.kind == fromDir && e.src.dir == dir && !slices.Contains(names, n) && e.cur.Load() != nil {
			names = append(names, n) // gone: sync unloads it
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := r.syncDirName(ctx, dir, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sync brings entry e in line with its source.
func (r *Registry) sync(ctx context.Context, e *entry) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	start := time.Now()
	r.mu.Lock()
	src, closed := e.src, r.closed
	r.mu.Unlock()
	if closed {
		return ErrRegistryClosed
	}
	wasm, policy, key, err := r.read(src, e.name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && src.kind == fromDir {
			if _, derr := os.Stat(src.dir); derr != nil {
				// The whole directory is gone (or unreadable): that is an
				// accident far more often than an intent to unload
				// everything, so the last good versions keep serving.
				r.cfg.logger.Error("provider directory is unavailable; keeping the last good version",
					"provider", e.name, "dir", src.dir, "error", derr)
				return fmt.Errorf("provider %q: %w", e.name, derr)
			}
			r.unload(e, "file removed")
			return nil
		}
		return r.rejectLocked(e, src, "", fmt.Errorf("reading provider %q: %w", e.name, err), start)
	}
	sum, _, _ := strings.Cut(key, ":")
	if key == e.key && e.cur.Load() != nil {
		return nil
	}
	if key == e.rejectedKey {
		return e.rejectedErr
	}
	p, err := r.prepare(ctx, e, wasm, policy)
	if err != nil {
		e.rejectedKey, e.rejectedErr = key, err
		return r.rejectLocked(e, src, sum, err, start)
	}
	e.rejectedKey, e.rejectedErr = "", nil
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = p.Close(context.WithoutCancel(ctx))
		return ErrRegistryClosed
	}
	r.mu.Unlock()
	e.key = key
	st := &e.st
	st.mu.Lock() // swap under the stats lock: Status never misses a version
	old := e.cur.Swap(p)
	st.reloadsOK++
	st.loadedAt = time.Now()
	if old != nil {
		if st.draining == nil {
			st.draining = map[*Provider]struct{}{}
		}
		st.draining[old] = struct{}{}
	}
	st.mu.Unlock()
	ev := Event{Kind: EventLoaded, Provider: e.name, Source: src.String(e.name), SHA256: sum, Duration: time.Since(start)}
	if old != nil {
		ev.Kind, ev.OldSHA256 = EventReloaded, old.SHA256()
		r.cfg.logger.Info("provider reloaded", "provider", e.name, "source", ev.Source,
			"sha256", sum, "previous", old.SHA256(), "took", ev.Duration.Round(time.Microsecond))
		r.retire(e, old)
	} else {
		r.cfg.logger.Info("provider serving", "provider", e.name, "source", ev.Source, "sha256", sum)
	}
	r.emit(ev)
	return nil
}

// read returns the module, policy and content key of name from src.
func (r *Registry) read(src source, name string) (wasm []byte, policy *Policy, key string, err error) {
	var polBytes []byte
	switch src.kind {
	case fromDir:
		wasm, err = r.cfg.readFile(filepath.Join(src.dir, name+".wasm"))
		if err != nil {
			return nil, nil, "", err
		}
		polPath := filepath.Join(src.dir, name+PolicyFileSuffix)
		polBytes, err = r.cfg.readFile(polPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			polBytes, err = nil, nil
		case err != nil:
			return nil, nil, "", err
		default:
			p, perr := ParsePolicy(polBytes)
			if perr != nil {
				return nil, nil, "", fmt.Errorf("%s: %w", polPath, perr)
			}
			policy = &p
		}
	case fromFS:
		wasm, err = fs.ReadFile(src.fsys, name+".wasm")
		if err != nil {
			return nil, nil, "", err
		}
		policy, polBytes, err = readPolicyFS(src.fsys, name+PolicyFileSuffix)
		if err != nil {
			return nil, nil, "", err
		}
	case fromBytes:
		wasm, policy = src.wasm, src.policy
		if policy != nil {
			polBytes, _ = json.Marshal(policy)
		}
	}
	pol := sha256.Sum256(polBytes)
	return wasm, policy, digest(wasm) + ":" + hex.EncodeToString(pol[:]), nil
}

// prepare loads a new version and proves it can serve, all off the call
// path: compile (from the cache when known), validate, instantiate, smoke
// call, pre-warm.
func (r *Registry) prepare(ctx context.Context, e *entry, wasm []byte, policy *Policy) (*Provider, error) {
	opts := []LoadOption{WithName(e.name)}
	if policy != nil {
		opts = append(opts, WithPolicy(*policy))
	}
	p, err := r.rt.LoadBytes(ctx, e.name, wasm, opts...)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Provider, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Close(cctx)
		return nil, err
	}
	if r.cfg.smoke != nil {
		if err := r.smoke(ctx, p); err != nil {
			return fail(fmt.Errorf("provider %q: %w: %w", e.name, ErrSmokeTest, err))
		}
	}
	if old := e.cur.Load(); old != nil && r.cfg.prewarmToLoad {
		live := old.PoolStats().Live
		if err := p.Warm(ctx, int(live)); err != nil {
			return fail(fmt.Errorf("provider %q: pre-warming: %w", e.name, err))
		}
	}
	return p, nil
}

func (r *Registry) smoke(ctx context.Context, p *Provider) error {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.smokeTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.cfg.smoke(sctx, p.ContextProvider()) }()
	select {
	case err := <-done:
		return err
	case <-time.After(r.cfg.smokeTimeout + 2*time.Second):
		// Only a guest compiled without interruption ignores its deadline:
		// it keeps a core busy for good, and its instance is abandoned.
		return fmt.Errorf("smoke call ignored its %s deadline (guests not interruptible?)", r.cfg.smokeTimeout)
	}
}

// retire waits in the background for old's calls to finish, then closes it.
func (r *Registry) retire(e *entry, old *Provider) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		timeout := r.cfg.drainTimeout
		if timeout <= 0 {
			timeout = time.Duration(old.Policy().CallTimeout) + 10*time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		err := old.Close(ctx)
		ps := old.PoolStats()
		created, discarded := ps.Created, ps.Discarded
		st := &e.st
		st.mu.Lock()
		delete(st.draining, old)
		st.retiredCreate += created
		st.retiredDisc += discarded
		st.mu.Unlock()
		ev := Event{Kind: EventDrained, Provider: e.name, SHA256: old.SHA256(), Err: err, Duration: time.Since(start)}
		if err != nil {
			r.cfg.logger.Warn("old provider version closed before its calls finished", "provider", e.name,
				"sha256", old.SHA256(), "error", err)
		} else {
			r.cfg.logger.Debug("old provider version drained and closed", "provider", e.name,
				"sha256", old.SHA256(), "took", ev.Duration)
		}
		r.emit(ev)
	}()
}

// unload removes e's serving version; e.loadMu is held.
func (r *Registry) unload(e *entry, why string) {
	e.key, e.rejectedKey, e.rejectedErr = "", "", nil
	st := &e.st
	st.mu.Lock()
	old := e.cur.Swap(nil)
	if old == nil {
		st.mu.Unlock()
		return
	}
	if st.draining == nil {
		st.draining = map[*Provider]struct{}{}
	}
	st.draining[old] = struct{}{}
	st.mu.Unlock()
	r.mu.Lock()
	src := e.src
	r.mu.Unlock()
	r.cfg.logger.Info("provider unloaded; calls in flight finish", "provider", e.name, "reason", why, "sha256", old.SHA256())
	r.emit(Event{Kind: EventUnloaded, Provider: e.name, Source: src.String(e.name), SHA256: old.SHA256()})
	r.retire(e, old)
}

func (r *Registry) rejectLocked(e *entry, src source, sum string, err error, start time.Time) error {
	r.reject(e, e.name, src, sum, err, start)
	return err
}

func (r *Registry) reject(e *entry, name string, src source, sum string, err error, start time.Time) {
	ev := Event{Kind: EventRejected, Provider: name, Source: src.String(name), SHA256: sum, Err: err, Duration: time.Since(start)}
	attrs := []any{"provider", name, "source", ev.Source, "error", err}
	if e != nil {
		if cur := e.cur.Load(); cur != nil {
			ev.OldSHA256 = cur.SHA256()
			attrs = append(attrs, "serving", cur.SHA256())
		}
		st := &e.st
		st.mu.Lock()
		st.reloadsFailed++
		st.lastErr, st.lastErrAt = err.Error(), time.Now()
		st.mu.Unlock()
	}
	if sum != "" {
		attrs = append(attrs, "sha256", sum)
	}
	if ev.OldSHA256 != "" {
		r.cfg.logger.Error("provider version rejected; the previous version keeps serving", attrs...)
	} else {
		r.cfg.logger.Error("provider version rejected; no version is serving", attrs...)
	}
	r.emit(ev)
}

func (r *Registry) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if r.cfg.onEvent != nil {
		r.cfg.onEvent(ev)
	}
}

// Close stops the watch, waits for loads in progress, then unloads every
// provider, waiting for calls in flight (or ctx).
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	stop := r.stopW
	entries := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
	}
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	var errs []error
	for _, e := range entries {
		e.loadMu.Lock()
		e.st.mu.Lock()
		p := e.cur.Swap(nil)
		e.st.mu.Unlock()
		e.loadMu.Unlock()
		if p != nil {
			if err := p.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("provider %q: %w", e.name, err))
			}
		}
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, context.Cause(ctx))
	}
	return errors.Join(errs...)
}

// ProviderStatus describes one provider name for metrics, health and
// diagnostics. Counters add up over every version the name has had.
type ProviderStatus struct {
	Name     string    `json:"name"`
	Source   string    `json:"source"`
	Serving  bool      `json:"serving"`
	SHA256   string    `json:"sha256,omitempty"`
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// PoolSize is the serving version's instance cap.
	PoolSize int `json:"poolSize,omitempty"`
	// Instances and InUse count live instances of every version still
	// open (the serving one and any draining).
	Instances int64 `json:"instances"`
	InUse     int64 `json:"inUse"`
	// InstancesCreated and InstancesDiscarded are cumulative.
	InstancesCreated   int64     `json:"instancesCreated"`
	InstancesDiscarded int64     `json:"instancesDiscarded"`
	Draining           int       `json:"draining"`
	ReloadsOK          int64     `json:"reloadsOK"`
	ReloadsFailed      int64     `json:"reloadsFailed"`
	LastError          string    `json:"lastError,omitempty"`
	LastErrorAt        time.Time `json:"lastErrorAt,omitzero"`
}

// Status reports every provider name the registry knows, sorted by name,
// including names whose last version was removed or never loaded.
func (r *Registry) Status() []ProviderStatus {
	r.mu.Lock()
	entries := make([]*entry, 0, len(r.entries))
	srcs := make([]source, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
		srcs = append(srcs, e.src)
	}
	r.mu.Unlock()
	out := make([]ProviderStatus, 0, len(entries))
	for i, e := range entries {
		s := ProviderStatus{Name: e.name, Source: srcs[i].String(e.name)}
		st := &e.st
		st.mu.Lock()
		cur := e.cur.Load()
		s.InstancesCreated, s.InstancesDiscarded = st.retiredCreate, st.retiredDisc
		add := func(p *Provider) {
			st := p.PoolStats()
			created, live, inUse, discarded := st.Created, st.Live, st.InUse, st.Discarded
			s.InstancesCreated += created
			s.InstancesDiscarded += discarded
			s.Instances += live
			s.InUse += inUse
		}
		for p := range st.draining {
			add(p)
		}
		if cur != nil {
			add(cur)
			s.Serving, s.SHA256, s.PoolSize, s.LoadedAt = true, cur.SHA256(), cur.Policy().PoolSize, st.loadedAt
		}
		s.Draining = len(st.draining)
		s.ReloadsOK, s.ReloadsFailed = st.reloadsOK, st.reloadsFailed
		s.LastError, s.LastErrorAt = st.lastErr, st.lastErrAt
		st.mu.Unlock()
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ProviderStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Handle is a provider of a Registry by name. It implements cloud.Provider
// (ContextProvider gives the context-aware view) and sends every call to
// the version serving when the call starts. A call that races with a swap
// and reaches the replaced version after it stopped taking calls (nothing
// ran) is sent again to the new version, so a reload fails no call.
type Handle struct {
	r *Registry
	e *entry
}

var (
	_ cloud.Provider        = (*Handle)(nil)
	_ cloud.ContextProvider = handleContext{}
)

// Name is the provider's name.
func (h *Handle) Name() string { return h.e.name }

// Current returns the version serving now, or nil if the provider has been
// removed. Prefer calling through the Handle, which follows reloads.
func (h *Handle) Current() *Provider { return h.e.cur.Load() }

// SHA256 is the digest of the version serving now ("" if removed).
func (h *Handle) SHA256() string {
	if p := h.e.cur.Load(); p != nil {
		return p.SHA256()
	}
	return ""
}

// ContextProvider returns the handle as a cloud.ContextProvider.
func (h *Handle) ContextProvider() cloud.ContextProvider { return handleContext{h} }

// route runs fn on the current version, again on the next one if the
// version it got was closed by a swap before the call could start.
func (h *Handle) route(ctx context.Context, m abi.Method, fn func(cloud.ContextProvider) error) error {
	for {
		p := h.e.cur.Load()
		if p == nil {
			return &CallError{Provider: h.e.name, Method: m, Class: ClassTransient,
				Err: fmt.Errorf("%w: %q", ErrProviderNotFound, h.e.name)}
		}
		err := fn(p.ContextProvider())
		if err == nil || !errors.Is(err, ErrProviderClosed) || ctx.Err() != nil {
			return err
		}
		if h.e.cur.Load() == p {
			return err // closed without a successor: the registry is closing
		}
	}
}

// The cloud.Provider methods run with context.Background(); each version's
// policy bounds the call.

// AddDefaults implements cloud.Provider.
func (h *Handle) AddDefaults(spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return handleContext{h}.AddDefaults(context.Background(), spec)
}

// Validate implements cloud.Provider.
func (h *Handle) Validate(spec clusterv1alpha1.MachineSpec) error {
	return handleContext{h}.Validate(context.Background(), spec)
}

// Get implements cloud.Provider.
func (h *Handle) Get(machine *clusterv1alpha1.Machine) (instance.Instance, error) {
	return handleContext{h}.Get(context.Background(), machine)
}

// GetCloudConfig implements cloud.Provider.
func (h *Handle) GetCloudConfig(spec clusterv1alpha1.MachineSpec) (string, string, error) {
	return handleContext{h}.GetCloudConfig(context.Background(), spec)
}

// Create implements cloud.Provider.
func (h *Handle) Create(machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData, userdata string) (instance.Instance, error) {
	return handleContext{h}.Create(context.Background(), machine, data, userdata)
}

// Delete implements cloud.Provider.
func (h *Handle) Delete(machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData) error {
	return handleContext{h}.Delete(context.Background(), machine, data)
}

// MachineMetricsLabels implements cloud.Provider.
func (h *Handle) MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error) {
	return handleContext{h}.MachineMetricsLabels(context.Background(), machine)
}

// MigrateUID implements cloud.Provider.
func (h *Handle) MigrateUID(machine *clusterv1alpha1.Machine, newUID types.UID) error {
	return handleContext{h}.MigrateUID(context.Background(), machine, newUID)
}

type handleContext struct{ h *Handle }

func (c handleContext) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec) (out clusterv1alpha1.MachineSpec, err error) {
	out = spec
	err = c.h.route(ctx, abi.MethodAddDefaults, func(p cloud.ContextProvider) (err error) {
		out, err = p.AddDefaults(ctx, spec)
		return err
	})
	return out, err
}

func (c handleContext) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec) error {
	return c.h.route(ctx, abi.MethodValidate, func(p cloud.ContextProvider) error { return p.Validate(ctx, spec) })
}

func (c handleContext) Get(ctx context.Context, machine *clusterv1alpha1.Machine) (out instance.Instance, err error) {
	err = c.h.route(ctx, abi.MethodGet, func(p cloud.ContextProvider) (err error) {
		out, err = p.Get(ctx, machine)
		return err
	})
	return out, err
}

func (c handleContext) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec) (config, name string, err error) {
	err = c.h.route(ctx, abi.MethodGetCloudConfig, func(p cloud.ContextProvider) (err error) {
		config, name, err = p.GetCloudConfig(ctx, spec)
		return err
	})
	return config, name, err
}

func (c handleContext) Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData, userdata string) (out instance.Instance, err error) {
	err = c.h.route(ctx, abi.MethodCreate, func(p cloud.ContextProvider) (err error) {
		out, err = p.Create(ctx, machine, data, userdata)
		return err
	})
	return out, err
}

func (c handleContext) Delete(ctx context.Context, machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData) error {
	return c.h.route(ctx, abi.MethodDelete, func(p cloud.ContextProvider) error { return p.Delete(ctx, machine, data) })
}

func (c handleContext) MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine) (out map[string]string, err error) {
	err = c.h.route(ctx, abi.MethodMachineMetricsLabels, func(p cloud.ContextProvider) (err error) {
		out, err = p.MachineMetricsLabels(ctx, machine)
		return err
	})
	return out, err
}

func (c handleContext) MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID) error {
	return c.h.route(ctx, abi.MethodMigrateUID, func(p cloud.ContextProvider) error { return p.MigrateUID(ctx, machine, newUID) })
}
