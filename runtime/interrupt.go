package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// Deadlines the same way on every engine: modules are instrumented at load
// (package internal/interrupt) with checks no execution path can run long
// without meeting, every host function call is one too, and a call that
// outlives its context has the instance interrupted by
// context.AfterFunc — no goroutine per call, no timer beyond the context's
// own — or, for a context without a deadline, by the instance's reusable
// timer. The instance is discarded afterwards: its flag is set and its
// state torn.

// watch arms the interrupt of inst for one guest call under ctx. Call
// stop when the guest returns.
func (inst *guestInstance) watch(ctx context.Context) *watch {
	if !inst.inst.Interruptible() || ctx.Done() == nil {
		return nil
	}
	w := &watch{inst: inst.inst}
	w.stopFn = context.AfterFunc(ctx, w.fire)
	return w
}

type watch struct {
	inst   engine.Instance
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
		w.inst.Interrupt()
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

// epoch anchors the instances' deadlines on the monotonic clock.
var epoch = time.Now()

// startTimeout arms the instance's reusable timer for a call whose context
// has no deadline (d is the policy's call timeout; 0 arms nothing). Reusing
// one timer per instance makes the timeout free of allocations.
func (inst *guestInstance) startTimeout(d time.Duration) {
	if d <= 0 || !inst.inst.Interruptible() {
		return
	}
	inst.deadline.Store(int64(time.Since(epoch) + d))
	if inst.timer == nil {
		inst.timer = time.AfterFunc(d, inst.onTimeout)
	} else {
		inst.timer.Reset(d)
	}
}

// The instance's deadline word: > 0 armed (the deadline), 0 idle,
// timeoutFiring while onTimeout sets the flag, timeoutFired once it has.
const (
	timeoutFiring = -1
	timeoutFired  = -2
)

// onTimeout interrupts the call in flight if its deadline has passed. A
// firing meant for an earlier call finds a later deadline (or none) and
// does nothing; the timer was reset for the current one.
func (inst *guestInstance) onTimeout() {
	d := inst.deadline.Load()
	if d <= 0 || int64(time.Since(epoch)) < d {
		return
	}
	if inst.deadline.CompareAndSwap(d, timeoutFiring) {
		inst.inst.Interrupt()
		inst.deadline.Store(timeoutFired)
	}
}

// stopTimeout disarms the timer and reports whether it interrupted the call.
// If the timer is setting the flag right now it waits for it, so the flag
// is never set behind the caller's back on an instance it keeps (or after
// it closed the instance).
func (inst *guestInstance) stopTimeout() bool {
	if inst.timer == nil {
		return false
	}
	for {
		switch d := inst.deadline.Load(); {
		case d > 0:
			if inst.deadline.CompareAndSwap(d, 0) {
				inst.timer.Stop()
				return false
			}
		case d == timeoutFiring:
			goruntime.Gosched() // a few nanoseconds: the flag store
		case d == timeoutFired:
			inst.deadline.Store(0)
			return true
		default:
			return false
		}
	}
}

// interruptError is the error of a guest call the host interrupted: its
// context was cancelled or its deadline passed. It unwraps to the context
// error, so callers test it with errors.Is as they would a context error.
type interruptError struct{ cause error }

func (e *interruptError) Error() string { return "guest call interrupted: " + e.cause.Error() }
func (e *interruptError) Unwrap() error { return e.cause }

var (
	errInterruptedDeadline = &interruptError{context.DeadlineExceeded}
	errInterruptedCanceled = &interruptError{context.Canceled}
)

// interruptedError is the error of a call stopped by its context.
func interruptedError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return errInterruptedCanceled
	}
	return errInterruptedDeadline
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
