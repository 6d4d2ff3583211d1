package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/wasmprov/wasmprov/runtime"
	"k8s.io/utils/clock"
)

// Watch watches the directories given to LoadDir, before Watch or after
// it, and keeps the registry in line with them until ctx is done or the
// registry is closed: a new
// "<name>.wasm" is loaded, a changed one (or its "<name>.yaml") reloaded, a
// removed one unloaded. It returns once the watch is established.
//
// Events for one name are debounced (WithDebounce): a file written in
// place in several chunks, or replaced many times in a row, is read once it
// has been quiet for that long. An atomic rename into place is seen as one
// change. A read that still catches a half-written file fails to compile
// and is rejected, leaving the last good version serving; the final write
// brings another attempt. Changes to "..data" (Kubernetes ConfigMap and
// Secret volumes swap a symlink) rescan the whole directory.
//
// A directory that disappears does not unload anything: its providers keep
// serving their last good version, an EventWatchError is emitted, and the
// directory is polled for (WithDirPollInterval) and rescanned when it is
// back.
func (r *Registry) Watch(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if r.watch != nil {
		r.mu.Unlock()
		return errors.New("registry is already watching")
	}
	dirs := slices.Clone(r.dirs)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("watching provider directories: %w", err)
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			r.mu.Unlock()
			_ = w.Close()
			return fmt.Errorf("watching provider directory %s: %w", d, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	wt := &watcher{r: r, w: w, ctx: ctx, stop: cancel, timers: map[timerKey]clock.Timer{}, dirs: dirs}
	r.watch = wt
	r.wg.Add(1)
	r.mu.Unlock()
	go wt.loop()
	if r.cfg.imagePoll > 0 {
		r.wg.Add(1)
		// The ticker starts here, not in the goroutine: the first poll is
		// one interval after Watch returns, whatever the clock.
		go wt.pollImages(r.cfg.clock.NewTicker(r.cfg.imagePoll))
	}
	r.cfg.logger.Info("watching provider directories", "dirs", dirs, "debounce", r.cfg.debounce)
	return nil
}

type watcher struct {
	r    *Registry
	w    *fsnotify.Watcher
	ctx  context.Context
	stop context.CancelFunc

	mu sync.Mutex
	// dirs are the directories watched: those LoadDir had seen when Watch
	// started, then each one LoadDir is given later (addDir). The event
	// loop reads it while LoadDir may append to it.
	dirs    []string
	timers  map[timerKey]clock.Timer
	stopped bool // the loop ended and closed w
}

// timerKey names a debounce timer: a file's provider name in dir, or ""
// for a rescan of dir.
type timerKey struct{ dir, name string }

func (wt *watcher) loop() {
	defer wt.r.wg.Done()
	defer func() {
		wt.mu.Lock()
		wt.stopped = true
		_ = wt.w.Close()
		for _, t := range wt.timers {
			t.Stop()
		}
		wt.mu.Unlock()
	}()
	for {
		select {
		case <-wt.ctx.Done():
			return
		case ev, ok := <-wt.w.Events:
			if !ok {
				return
			}
			wt.handle(ev)
		case err, ok := <-wt.w.Errors:
			if !ok {
				return
			}
			wt.r.cfg.logger.Error("provider directory watch error; providers keep serving", "error", err)
			wt.r.emit(Event{Kind: EventWatchError, Err: err})
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				for _, d := range wt.watched() {
					wt.schedule(d, "")
				}
			}
		}
	}
}

func (wt *watcher) handle(ev fsnotify.Event) {
	path := filepath.Clean(ev.Name)
	dirs := wt.watched()
	if slices.Contains(dirs, path) {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			wt.dirGone(path)
		}
		return
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	if !slices.Contains(dirs, dir) {
		return
	}
	if name, ok := strings.CutSuffix(base, ImageEntrySuffix); ok && ValidName(name) {
		// An image entry, unless it is the policy of "<name>.provider.wasm"
		// (handled below as any policy file).
		if _, err := os.Stat(filepath.Join(dir, name+".provider.wasm")); err != nil {
			wt.schedule(dir, name)
			return
		}
	}
	name, ok := strings.CutSuffix(base, ".wasm")
	if !ok {
		name, ok = strings.CutSuffix(base, runtime.PolicyFileSuffix)
	}
	switch {
	case ok && ValidName(name):
		// Every kind of change, a chmod included (it can make the file
		// readable or unreadable), means "read it again"; unchanged
		// content costs a hash.
		wt.schedule(dir, name)
	case strings.HasPrefix(base, ".."):
		wt.schedule(dir, "")
	}
}

// addDir starts watching dir, given to LoadDir after Watch started. A
// directory already watched, or a watch that has ended, is left alone.
// Holding wt.mu across w.Add is safe: fsnotify delivers events without
// its own lock held, so a loop waiting for wt.mu blocks no Add.
func (wt *watcher) addDir(dir string) error {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.stopped || slices.Contains(wt.dirs, dir) {
		return nil
	}
	if err := wt.w.Add(dir); err != nil {
		return err
	}
	wt.dirs = append(wt.dirs, dir)
	return nil
}

// watched returns a copy of the directories watched.
func (wt *watcher) watched() []string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return slices.Clone(wt.dirs)
}

// schedule (re)starts the debounce timer of dir/name; name "" rescans dir.
func (wt *watcher) schedule(dir, name string) {
	key := timerKey{dir, name}
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if t, ok := wt.timers[key]; ok {
		t.Reset(wt.r.cfg.debounce)
		return
	}
	// fire runs on a goroutine of its own whatever the clock: a fake
	// clock calls this function inside its Step, with its lock held.
	wt.timers[key] = wt.r.cfg.clock.AfterFunc(wt.r.cfg.debounce, func() { go wt.fire(key) })
}

func (wt *watcher) fire(key timerKey) {
	wt.mu.Lock()
	delete(wt.timers, key)
	wt.mu.Unlock()
	r := wt.r
	r.mu.Lock()
	if r.closed || wt.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	if key.name == "" {
		_ = r.rescanDir(wt.ctx, key.dir)
		return
	}
	_ = r.syncDirName(wt.ctx, key.dir, key.name)
}

// dirGone handles a watched directory that was removed or renamed: nothing
// is unloaded; the directory is polled for until it is back.
func (wt *watcher) dirGone(dir string) {
	r := wt.r
	err := fmt.Errorf("provider directory %s disappeared; providers keep serving their last good version", dir)
	r.cfg.logger.Error("provider directory disappeared; providers keep serving their last good version",
		"dir", dir, "pollEvery", r.cfg.dirPoll)
	// The poll's ticker starts before the event: the first look is one
	// interval after it, whatever the clock.
	t := r.cfg.clock.NewTicker(r.cfg.dirPoll)
	r.emit(Event{Kind: EventWatchError, Source: dir, Err: err})
	_ = wt.w.Remove(dir) // inotify dropped it already; other backends may not
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		t.Stop()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer t.Stop()
		for {
			select {
			case <-wt.ctx.Done():
				return
			case <-t.C():
			}
			fi, err := os.Stat(dir)
			if err != nil || !fi.IsDir() {
				continue
			}
			if err := wt.w.Add(dir); err != nil {
				r.cfg.logger.Warn("provider directory is back but cannot be watched yet", "dir", dir, "error", err)
				continue
			}
			r.cfg.logger.Info("provider directory is back; rescanning", "dir", dir)
			wt.schedule(dir, "")
			return
		}
	}()
}
