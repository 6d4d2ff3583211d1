package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// SmokeTest exercises a freshly loaded version before it may serve calls.
// An error rejects the version; the previous one keeps serving.
type SmokeTest func(ctx context.Context, p provider.Interface) error

// DefaultSmokeTest calls AddDefaults with an empty MachineSpec — a method
// every provider implements without touching a cloud — and fails only if
// the sandbox failed: a trap, a panic, a timeout or an answer the ABI does
// not allow. The provider's own verdict (most refuse an empty spec) is fine.
func DefaultSmokeTest(ctx context.Context, p provider.Interface) error {
	_, err := p.AddDefaults(ctx, clusterv1alpha1.MachineSpec{}, nil)
	switch runtime.ErrorClass(err) {
	case runtime.ClassTrap, runtime.ClassTimeout, runtime.ClassCanceled, runtime.ClassBadResult:
		return err
	}
	if err != nil && runtime.ErrorClass(err) == "" {
		return err
	}
	return nil
}

// LoadDir loads every "<name>.wasm" in dir, each with its optional
// "<name>.yaml" policy, and remembers dir for ReloadAll and Watch; if the
// registry is already watching, dir is watched from now on. A module that
// fails to load does not stop the others: the error joins every failure,
// and the good providers serve.
func (r *Registry) LoadDir(ctx context.Context, dir string) error {
	dir = filepath.Clean(dir)
	names, err := listDir(dir)
	if err != nil {
		return fmt.Errorf("provider directory: %w", err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if !slices.Contains(r.dirs, dir) {
		r.dirs = append(r.dirs, dir)
	}
	// Read under r.mu, like Watch's copy of r.dirs: dir is either in that
	// copy or added here.
	wt := r.watch
	r.mu.Unlock()
	var errs []error
	// Watch before loading: a change after this is seen by the watch, one
	// before it by the load below.
	if wt != nil {
		if err := wt.addDir(dir); err != nil {
			r.cfg.logger.Error("cannot watch provider directory; its providers load but do not hot-reload",
				"dir", dir, "error", err)
			errs = append(errs, fmt.Errorf("watching provider directory %s: %w", dir, err))
		}
	}
	for _, name := range names {
		if err := r.syncDirName(ctx, dir, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Register loads (or hot-replaces) the provider name from a module in
// memory. policy nil means the runtime's default policy.
func (r *Registry) Register(ctx context.Context, name string, wasm []byte, policy *runtime.Policy) error {
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
	if !ValidName(name) {
		return nil, fmt.Errorf("invalid provider name %q", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	e, ok := r.entries[name]
	if !ok {
		e = &entry{name: name, src: src}
		e.handle = newHandle(e)
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
		return ErrClosed
	}
	wasm, policy, key, img, err := r.read(ctx, e, src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && src.kind == fromDir && !r.imageEntryStays(e, src) {
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
		if ve, ok := errors.AsType[*VersionError](err); ok {
			// A refused artifact says which step refused it already.
			r.pinImages(e, e.img.pinStore) // not the refused one
			r.staleOnUnresolved(e, ve)
			return r.rejectLocked(e, src, ve.ModuleSHA256, err, start)
		}
		return r.rejectLocked(e, src, "", fmt.Errorf("reading provider %q: %w", e.name, err), start)
	}
	sum := key.moduleSHA256()
	if key == e.key && e.cur.Load() != nil {
		r.confirm(e, img)
		return nil
	}
	if key == e.rejectedKey {
		r.backOff(e, e.rejectedErr) // a refused module: no back-off
		r.pinImages(e, e.img.pinStore)
		if ve, ok := errors.AsType[*VersionError](e.rejectedErr); ok && (ve.Ref != img.ref || ve.Digest != img.digest) {
			// The same refused content under another reference.
			again := *ve
			again.Ref, again.Digest = img.ref, img.digest
			return &again
		}
		return e.rejectedErr
	}
	// Compiling a large module takes seconds the first time (the
	// compilation cache makes it instant after): say so before, and the
	// "serving" line after says how long it took.
	r.cfg.logger.Info("loading provider version", "provider", e.name, "sha256", sum, "bytes", len(wasm))
	p, err := r.prepare(ctx, e, wasm, policy, sum)
	if err != nil {
		if ve, ok := errors.AsType[*VersionError](err); ok {
			ve.Ref, ve.Digest = img.ref, img.digest
		}
		e.rejectedKey, e.rejectedErr = key, err
		r.pinImages(e, e.img.pinStore)
		return r.rejectLocked(e, src, sum, err, start)
	}
	e.rejectedKey, e.rejectedErr = contentKey{}, nil
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = p.Close(context.WithoutCancel(ctx))
		return ErrClosed
	}
	r.mu.Unlock()
	e.key = key
	st := &e.st
	st.mu.Lock() // swap under the stats lock: Status never misses a version
	old := e.cur.Swap(p)
	st.reloadsOK++
	st.loadedAt = time.Now()
	st.image, st.imageDigest = img.ref, img.digest
	st.settled(img.stale)
	if old != nil {
		if st.draining == nil {
			st.draining = map[*runtime.Provider]struct{}{}
		}
		st.draining[old] = struct{}{}
	}
	st.mu.Unlock()
	e.img.serving = digest.Digest(img.digest)
	r.pinImages(e, img.store)
	r.backOff(e, nil)
	ev := Event{Kind: EventLoaded, Provider: e.name, Source: sourceOf(e, e.name, src), SHA256: sum, Image: img.pinned, Duration: time.Since(start)}
	attrs := []any{"provider", e.name, "source", ev.Source, "sha256", sum, "took", ev.Duration.Round(time.Microsecond).String()}
	if img.pinned != "" {
		attrs = append(attrs, "image", img.ref, "digest", img.digest)
	}
	if img.stale != nil {
		r.cfg.logger.Warn("serving the last known good version: the image's tag cannot be resolved now; it is tried again at every poll",
			"provider", e.name, "image", img.ref, "digest", img.digest, "resolvedAt", img.stale.since.Format(time.RFC3339), "error", img.stale.reason)
	}
	if old != nil {
		ev.Kind, ev.OldSHA256 = EventReloaded, old.SHA256()
		r.cfg.logger.Info("provider reloaded", append(attrs, "previous", old.SHA256())...)
		r.retire(e, old)
	} else {
		r.cfg.logger.Info("provider serving", attrs...)
	}
	r.emit(ev)
	return nil
}

// confirm records that the version serving is what e's source names
// now: the same version under another reference, a tag re-resolved, or
// the same module from another kind of source. e.loadMu is held.
func (r *Registry) confirm(e *entry, img imageInfo) {
	e.st.mu.Lock()
	e.st.image, e.st.imageDigest = img.ref, img.digest
	e.st.settled(img.stale)
	e.st.mu.Unlock()
	e.img.serving = digest.Digest(img.digest)
	r.pinImages(e, img.store)
	r.backOff(e, nil)
}

// staleOnUnresolved marks the version serving e stale when ve says its
// tag could not be resolved: it is the last known good until the tag
// resolves again. e.loadMu is held.
func (r *Registry) staleOnUnresolved(e *entry, ve *VersionError) {
	if ve.Stage != StagePull || ve.Digest != "" || e.cur.Load() == nil {
		return
	}
	e.st.mu.Lock()
	if e.st.stale == nil {
		e.st.stale = &staleInfo{reason: ve.Error(), since: e.img.resolvedAt}
	}
	e.st.mu.Unlock()
}

// imageEntryStays says whether e is an image entry whose file is still
// there: a "not found" from its registry is a failed pull, not a removal.
func (r *Registry) imageEntryStays(e *entry, src source) bool {
	if !e.isImage.Load() {
		return false
	}
	_, ok := imageEntryPath(src.dir, e.name)
	return ok
}

// prepare loads a new version and proves it can serve, all off the call
// path: compile (from the cache when known), validate, instantiate, smoke
// call, pre-warm. Its refusals are *VersionError (StageLoad, StageSmoke);
// sum is the module's digest.
func (r *Registry) prepare(ctx context.Context, e *entry, wasm []byte, policy *runtime.Policy, sum string) (*runtime.Provider, error) {
	refuse := func(stage Stage, err error) error {
		return &VersionError{Provider: e.name, Stage: stage, ModuleSHA256: sum, Err: err}
	}
	opts := []runtime.LoadOption{runtime.WithName(e.name)}
	if policy != nil {
		opts = append(opts, runtime.WithPolicy(*policy))
	}
	p, err := r.rt.LoadBytes(ctx, e.name, wasm, opts...)
	if err != nil {
		return nil, refuse(StageLoad, err)
	}
	fail := func(err error) (*runtime.Provider, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Close(cctx)
		return nil, err
	}
	if r.cfg.smoke != nil {
		if err := r.smoke(ctx, p); err != nil {
			return fail(refuse(StageSmoke, fmt.Errorf("%w: %w", ErrSmokeTest, err)))
		}
	}
	if old := e.cur.Load(); old != nil && r.cfg.prewarmToLoad {
		live := old.PoolStats().Live
		if err := p.Warm(ctx, int(live)); err != nil {
			return fail(refuse(StageLoad, fmt.Errorf("pre-warming: %w", err)))
		}
	}
	return p, nil
}

func (r *Registry) smoke(ctx context.Context, p *runtime.Provider) error {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.smokeTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.cfg.smoke(sctx, p) }()
	select {
	case err := <-done:
		return err
	case <-time.After(r.cfg.smokeTimeout + 2*time.Second):
		// Only a guest compiled without interruption ignores its deadline:
		// it keeps a core busy for good, and its instance is abandoned.
		return fmt.Errorf("smoke call ignored its %s deadline (guests not interruptible?)", r.cfg.smokeTimeout)
	}
}
