package runtime

import (
	"context"
	"errors"
	"sync"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Deadlines without wazero's close-on-done: modules are instrumented at
// load (package internal/interrupt) to check an exported flag at every
// function entry and loop header, and a call that outlives its context has
// the flag set by context.AfterFunc — no goroutine per call, no timer
// beyond the context's own. The instance is discarded afterwards: its flag
// is set and its state torn.

// watch arms the interrupt of inst for one guest call under ctx. Call
// stop when the guest returns.
func (inst *guestInstance) watch(ctx context.Context) *watch {
	if inst.flag == nil || ctx.Done() == nil {
		return nil
	}
	w := &watch{flag: inst.flag}
	w.stopFn = context.AfterFunc(ctx, w.fire)
	return w
}

type watch struct {
	flag   api.MutableGlobal
	stopFn func() bool
	mu     sync.Mutex
	done   bool
	fired  bool
}

// fire runs on its own goroutine when the context ends: it sets the flag
// unless the call already returned (the instance may then be closed).
func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.flag.Set(1)
		w.fired = true
	}
}

// stop disarms the watch and reports whether the guest was interrupted (the
// instance must then be discarded, even if the call had just returned).
func (w *watch) stop() bool {
	if w == nil || w.stopFn() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	return w.fired
}

// interruptedError is the error of a call stopped by its context: the same
// exit error wazero's close-on-done reports, so the classification is
// unchanged.
func interruptedError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return sys.NewExitError(sys.ExitCodeContextCanceled)
	}
	return sys.NewExitError(sys.ExitCodeDeadlineExceeded)
}

// guard runs one guest call of inst under ctx's deadline.
func (inst *guestInstance) guard(ctx context.Context, call func() error) error {
	w := inst.watch(ctx)
	err := call()
	if w.stop() {
		return interruptedError(ctx)
	}
	return err
}
