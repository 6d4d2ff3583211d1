// Package pool is a capped pool of single-user items: the host keeps each
// wasm instance to one caller at a time (wazero instances are not safe for
// concurrent calls), bounds how many exist, and closes every item it drops.
package pool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// ErrClosed is returned by Get after Close.
var ErrClosed = errors.New("pool is closed")

// Item is what the pool holds.
type Item interface {
	// Close releases the item. The pool calls it exactly once for every item
	// it created, when the item is discarded, retired or the pool closes.
	Close(ctx context.Context) error
}

// Pool hands out items one caller at a time. At most Max items exist at
// once; Get blocks while all are in use.
//
// A slot token is held for every item in use, being made, or being closed
// by the reaper; idle items hold none. So once Close has taken every slot
// (drain), no item of the pool is open or being closed.
type Pool[T Item] struct {
	newItem func(context.Context) (T, error)
	slots   chan struct{} // a token per item that may exist
	mu      sync.Mutex
	// idle is a stack: Get takes the most recently used item (its memory is
	// the warmest), so the oldest idle items are at the front, where the
	// reaper takes them.
	idle    []idleItem[T]
	closed  bool
	stats   Stats
	done    chan struct{} // closed by Close: wakes waiting Gets
	drained chan struct{} // closed once, after Close, every item is back and closed

	// idleTimeout > 0: an item idle that long is closed (reap). reaper is
	// armed while an item is idle and the pool open, and stopped by Close.
	idleTimeout time.Duration
	reaper      clock.Timer
	reapCtx     context.Context            // what reaped items are closed with
	clock       clock.WithDelayedExecution // what idle time is measured on
}

type idleItem[T Item] struct {
	it    T
	since time.Time // when it became idle; zero without an idle timeout
}

// Option configures New.
type Option func(*options)

type options struct {
	idleTimeout time.Duration
	reapCtx     context.Context
	clock       clock.WithDelayedExecution
}

// WithIdleTimeout closes an item once it has been idle for d, down to no
// item at all: the next Get makes one. d <= 0 (the default) keeps idle
// items until Close. ctx is what reaped items are closed with (their
// Close must not depend on a caller's context: none is waiting).
func WithIdleTimeout(ctx context.Context, d time.Duration) Option {
	return func(o *options) { o.idleTimeout, o.reapCtx = d, ctx }
}

// WithClock sets the clock the idle timeout is measured and timed on
// (default clock.RealClock{}): a test passes a fake one
// (k8s.io/utils/clock/testing) and reaps by stepping it. nil is the
// default.
func WithClock(c clock.WithDelayedExecution) Option {
	return func(o *options) { o.clock = c }
}

// Stats counts what the pool did. Read it with Stats().
type Stats struct {
	Created   atomic.Int64
	Discarded atomic.Int64 // closed because unhealthy or retired
	Live      atomic.Int64 // created and not yet closed
	InUse     atomic.Int64
	Reaped    atomic.Int64 // closed after the idle timeout
}

// New returns a pool of at most max items made by newItem.
func New[T Item](max int, newItem func(context.Context) (T, error), opts ...Option) *Pool[T] {
	if max < 1 {
		max = 1
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	p := &Pool[T]{newItem: newItem, slots: make(chan struct{}, max), done: make(chan struct{}), drained: make(chan struct{}),
		clock: o.clock}
	if o.idleTimeout > 0 {
		p.idleTimeout, p.reapCtx = o.idleTimeout, o.reapCtx
		if p.reapCtx == nil {
			p.reapCtx = context.Background()
		}
	}
	return p
}

// IdleTimeout is how long an item may stay idle before it is closed (0:
// forever).
func (p *Pool[T]) IdleTimeout() time.Duration { return p.idleTimeout }

// Max is the pool's capacity.
func (p *Pool[T]) Max() int { return cap(p.slots) }

// Stats returns the pool's counters.
func (p *Pool[T]) Stats() *Stats { return &p.stats }

// Get returns an idle item or a new one, waiting for a free slot until ctx
// is done.
func (p *Pool[T]) Get(ctx context.Context) (T, error) {
	var zero T
	select {
	case p.slots <- struct{}{}: // the common case: a free slot, no waiting
	default:
		select {
		case p.slots <- struct{}{}:
		case <-p.done:
			return zero, ErrClosed
		case <-ctx.Done():
			return zero, context.Cause(ctx)
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.release()
		return zero, ErrClosed
	}
	if n := len(p.idle); n > 0 {
		it := p.idle[n-1].it
		p.idle[n-1] = idleItem[T]{}
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		p.stats.InUse.Add(1)
		return it, nil
	}
	p.mu.Unlock()
	it, err := p.newItem(ctx)
	if err != nil {
		p.release()
		return zero, err
	}
	p.stats.Created.Add(1)
	p.stats.Live.Add(1)
	p.stats.InUse.Add(1)
	return it, nil
}

// Put returns an item obtained from Get. An unhealthy item — one whose call
// trapped, timed out or that reached its call budget — is closed, never
// handed out again.
func (p *Pool[T]) Put(ctx context.Context, it T, healthy bool) {
	p.stats.InUse.Add(-1)
	p.mu.Lock()
	if healthy && !p.closed {
		p.pushIdleLocked(it)
		p.mu.Unlock()
		p.release()
		return
	}
	p.mu.Unlock()
	if !healthy {
		p.stats.Discarded.Add(1)
	}
	p.closeItem(ctx, it)
	p.release()
}

// Adopt adds an item created outside the pool as an idle item. It reports
// false, leaving the item to the caller, when the pool is full (its items
// in use, being made and idle already number Max) or closed.
func (p *Pool[T]) Adopt(it T) bool {
	select {
	case p.slots <- struct{}{}:
	default:
		return false
	}
	defer p.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	// A slot is held for every item in use or being made (this call's own
	// included); a Get that takes one after this check finds the adopted
	// item idle rather than making another.
	if p.closed || len(p.slots)+len(p.idle) > cap(p.slots) {
		return false
	}
	p.pushIdleLocked(it)
	p.stats.Created.Add(1)
	p.stats.Live.Add(1)
	return true
}

// pushIdleLocked makes it idle, timestamped and the reaper armed when
// there is an idle timeout. p.mu is held.
func (p *Pool[T]) pushIdleLocked(it T) {
	if p.idleTimeout <= 0 {
		p.idle = append(p.idle, idleItem[T]{it: it})
		return
	}
	p.idle = append(p.idle, idleItem[T]{it: it, since: p.clock.Now()})
	if p.reaper == nil {
		p.armReaperLocked(p.idleTimeout)
	}
}

// armReaperLocked makes reap run in d. The reap runs on a goroutine of
// its own whatever the clock: RealClock's AfterFunc calls f on one, but a
// fake clock calls it from the Step that fired it, with the clock's lock
// held, and reap reads the clock. p.mu is held.
func (p *Pool[T]) armReaperLocked(d time.Duration) {
	p.reaper = p.clock.AfterFunc(d, func() { go p.reap() })
}

// reap closes the items idle for the idle timeout or longer, oldest
// first, and re-arms itself for the next one to expire. It holds a slot
// while it closes an item, so Close (which waits for every slot) never
// returns — nor its owner release what items share — while an item is
// being closed here; an item in use is never idle, so never reaped.
func (p *Pool[T]) reap() {
	for {
		select {
		case p.slots <- struct{}{}:
		default:
			// Every slot is taken: every item is in use or being made
			// (none idle), or Close is draining. Whoever returns an item
			// re-arms the reaper (the timer is dropped below).
			p.mu.Lock()
			p.reaper = nil
			if len(p.idle) > 0 && !p.closed {
				p.armReaperLocked(p.idleTimeout)
			}
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		if p.closed || len(p.idle) == 0 {
			p.reaper = nil
			p.mu.Unlock()
			p.release()
			return
		}
		if wait := p.idleTimeout - p.clock.Since(p.idle[0].since); wait > 0 {
			p.armReaperLocked(wait)
			p.mu.Unlock()
			p.release()
			return
		}
		it := p.idle[0].it
		p.idle = slices.Delete(p.idle, 0, 1)
		p.mu.Unlock()
		p.stats.Reaped.Add(1)
		p.closeItem(p.reapCtx, it)
		p.release()
	}
}

// Retire closes an item obtained from Get that is healthy but done (it
// reached its call budget). Unlike Put with healthy=false it is not counted
// as discarded.
func (p *Pool[T]) Retire(ctx context.Context, it T) {
	p.stats.InUse.Add(-1)
	p.closeItem(ctx, it)
	p.release()
}

// Warm creates items until n are idle (or the pool is full), so the first
// calls do not pay for instantiation.
func (p *Pool[T]) Warm(ctx context.Context, n int) error {
	var got []T
	defer func() {
		for _, it := range got {
			p.Put(ctx, it, true)
		}
	}()
	for i := 0; i < n && i < p.Max(); i++ {
		p.mu.Lock()
		enough := len(p.idle) >= n
		p.mu.Unlock()
		if enough {
			return nil
		}
		it, err := p.Get(ctx)
		if err != nil {
			return err
		}
		got = append(got, it)
	}
	return nil
}

// Close stops handing out items, closes the idle ones, and waits until
// every item in use has been returned (and closed) or ctx is done. Calls in
// flight finish normally.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	idle := p.idle
	p.idle = nil
	if p.reaper != nil {
		// A reap already running sees closed and stops; one that fired
		// and waits for the lock does too.
		p.reaper.Stop()
		p.reaper = nil
	}
	p.mu.Unlock()
	for _, it := range idle {
		p.closeItem(ctx, it.it)
	}
	if !already {
		close(p.done)
		go p.drain()
	}
	select {
	case <-p.drained:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// drain takes every slot: each is free only once its item is back (and, the
// pool being closed, closed).
func (p *Pool[T]) drain() {
	for i := 0; i < cap(p.slots); i++ {
		p.slots <- struct{}{}
	}
	close(p.drained)
}

// Drained is closed once the pool is closed and every item it made has
// been closed: what owns the items' shared resources may release them then.
func (p *Pool[T]) Drained() <-chan struct{} { return p.drained }

func (p *Pool[T]) closeItem(ctx context.Context, it T) {
	_ = it.Close(ctx)
	p.stats.Live.Add(-1)
}

func (p *Pool[T]) release() { <-p.slots }
