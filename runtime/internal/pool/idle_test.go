package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The idle tests run the pool on a fake clock (WithClock) inside a
// synctest bubble: stepping the clock fires the reaper at once, and
// synctest.Wait is the sync point that says the reap it set off (on a
// goroutine of its own) is over. No test waits for wall-clock time.

// tracked is an item that records how often it was closed and when, on
// the pool's clock, it last became idle and was closed, so a test can
// tell a double close or an early reap.
type tracked struct {
	clock   *clocktesting.FakeClock
	closes  atomic.Int32
	idleAt  atomic.Int64 // UnixNano of the last Put, set by the test
	closeAt atomic.Int64
}

func (t *tracked) Close(context.Context) error {
	t.closes.Add(1)
	t.closeAt.Store(t.clock.Now().UnixNano())
	return nil
}

type trackedPool struct {
	*Pool[*tracked]
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	items []*tracked
}

func newFakeClock() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func newTrackedPool(max int, idle time.Duration) *trackedPool {
	tp := &trackedPool{clock: newFakeClock()}
	tp.Pool = New(max, func(context.Context) (*tracked, error) {
		it := &tracked{clock: tp.clock}
		tp.mu.Lock()
		tp.items = append(tp.items, it)
		tp.mu.Unlock()
		return it, nil
	}, WithIdleTimeout(context.Background(), idle), WithClock(tp.clock))
	return tp
}

func (tp *trackedPool) get(t *testing.T) *tracked {
	t.Helper()
	it, err := tp.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func (tp *trackedPool) put(it *tracked) {
	it.idleAt.Store(tp.clock.Now().UnixNano())
	tp.Put(context.Background(), it, true)
}

// step moves the pool's clock by d and returns once what that set off is
// over: a reap runs on a goroutine of its own, and synctest.Wait returns
// when every other goroutine of the bubble is blocked or gone.
func (tp *trackedPool) step(d time.Duration) {
	tp.clock.Step(d)
	synctest.Wait()
}

// reaperArmed reports whether the pool holds a reaper timer, under the
// pool's lock (a reap running may be clearing it).
func (tp *trackedPool) reaperArmed() bool {
	tp.Pool.mu.Lock()
	defer tp.Pool.mu.Unlock()
	return tp.reaper != nil
}

// Idle items are closed once idle for the timeout, every one of them (down
// to none), never before; the next Get makes a new one.
func TestIdleItemsAreReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 30 * time.Millisecond
		tp := newTrackedPool(3, timeout)
		a, b := tp.get(t), tp.get(t)
		tp.put(a)
		tp.step(10 * time.Millisecond)
		tp.put(b) // idle 10ms after a
		tp.step(timeout - 10*time.Millisecond - time.Nanosecond)
		if a.closes.Load() != 0 || b.closes.Load() != 0 {
			t.Fatalf("closed %d and %d times a nanosecond before the timeout, want 0", a.closes.Load(), b.closes.Load())
		}
		tp.step(time.Nanosecond) // a's timeout
		if a.closes.Load() != 1 || b.closes.Load() != 0 {
			t.Fatalf("at the first item's timeout: closed %d and %d times, want 1 and 0", a.closes.Load(), b.closes.Load())
		}
		tp.step(10 * time.Millisecond) // b's
		if n := tp.Stats().Live.Load(); n != 0 {
			t.Fatalf("live %d, want 0", n)
		}
		for _, it := range []*tracked{a, b} {
			if n := it.closes.Load(); n != 1 {
				t.Fatalf("closed %d times, want 1", n)
			}
			if idle := time.Duration(it.closeAt.Load() - it.idleAt.Load()); idle < timeout {
				t.Errorf("reaped after %v idle, before the %v timeout", idle, timeout)
			}
		}
		if s := tp.Stats(); s.Reaped.Load() != 2 || s.Discarded.Load() != 0 {
			t.Errorf("reaped %d, discarded %d; want 2, 0", s.Reaped.Load(), s.Discarded.Load())
		}
		if tp.reaperArmed() || tp.clock.HasWaiters() {
			t.Error("a reaper is armed with no item idle")
		}
		c := tp.get(t)
		if c == a || c == b || tp.Stats().Created.Load() != 3 {
			t.Fatalf("Get after the reap did not make a new item (created %d)", tp.Stats().Created.Load())
		}
		tp.put(c)
		if err := tp.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := c.closes.Load(); n != 1 {
			t.Fatalf("closed %d times, want 1", n)
		}
	})
}

// An item in use is never reaped, however long the call; it is reaped
// once idle for the timeout after it is back.
func TestInUseItemIsNotReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Millisecond
		tp := newTrackedPool(2, timeout)
		busy, idle := tp.get(t), tp.get(t)
		tp.put(idle)
		tp.step(timeout)
		if busy.closes.Load() != 0 || idle.closes.Load() != 1 {
			t.Fatalf("busy closed %d, idle closed %d; want 0, 1", busy.closes.Load(), idle.closes.Load())
		}
		if tp.clock.HasWaiters() {
			t.Fatal("a reaper is armed while the only item is in use")
		}
		tp.step(100 * timeout) // a long call
		if busy.closes.Load() != 0 {
			t.Fatalf("the item in use was closed %d times", busy.closes.Load())
		}
		if s := tp.Stats(); s.InUse.Load() != 1 || s.Live.Load() != 1 {
			t.Fatalf("in use %d, live %d; want 1, 1", s.InUse.Load(), s.Live.Load())
		}
		tp.put(busy)
		tp.step(timeout - time.Nanosecond)
		if n := busy.closes.Load(); n != 0 {
			t.Fatalf("closed %d times before its idle timeout, want 0", n)
		}
		tp.step(time.Nanosecond)
		if n := busy.closes.Load(); n != 1 || tp.Stats().Live.Load() != 0 {
			t.Fatalf("closed %d times, live %d; want 1, 0", n, tp.Stats().Live.Load())
		}
	})
}

// Without an idle timeout nothing is reaped (the behaviour before it).
func TestNoIdleTimeoutKeepsItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counted
		fc := newFakeClock()
		p := New(2, c.newItem, WithClock(fc))
		p.Put(context.Background(), mustGet(t, p), true)
		if p.reaper != nil || fc.HasWaiters() {
			t.Fatal("a reaper is armed without an idle timeout")
		}
		fc.Step(365 * 24 * time.Hour)
		synctest.Wait()
		if s := p.Stats(); s.Live.Load() != 1 || s.Reaped.Load() != 0 || c.closed.Load() != 0 {
			t.Fatalf("live %d, reaped %d, closed %d; want 1, 0, 0", s.Live.Load(), s.Reaped.Load(), c.closed.Load())
		}
	})
}

// Close stops the reaper: no timer stays armed, and a timer that would
// have fired after Close, or a reap that its timer set off just before
// Close, closes nothing a second time.
func TestCloseStopsReaper(t *testing.T) {
	for _, fired := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			const timeout = time.Millisecond
			tp := newTrackedPool(2, timeout)
			it := tp.get(t)
			tp.put(it)
			if fired {
				// The reap is on its way (no Wait): it races with Close.
				tp.clock.Step(timeout)
			}
			if err := tp.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tp.reaperArmed() || tp.clock.HasWaiters() {
				t.Fatalf("fired %v: the reaper is still armed after Close", fired)
			}
			tp.step(time.Hour)
			if n := it.closes.Load(); n != 1 {
				t.Fatalf("fired %v: closed %d times, want 1", fired, n)
			}
		})
	}
}

// Reaping races with Get, Put and Close (go test -race): every item is
// closed exactly once, none while in use, and Close returns with none
// live. The callers pause on the pool's clock; whenever all of them are
// paused or waiting for a slot it moves on, firing their pauses and the
// reaper together.
func TestReapRacesGetPutClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp := newTrackedPool(3, 200*time.Microsecond)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		pause := func(d time.Duration) {
			if d > 0 {
				select {
				case <-stop:
				case <-tp.clock.After(d):
				}
			}
		}
		var bad atomic.Int64
		for g := range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					it, err := tp.Get(context.Background())
					if err != nil {
						return // closed
					}
					if it.closes.Load() != 0 {
						bad.Add(1)
					}
					pause(time.Duration(g%3) * 100 * time.Microsecond)
					tp.Put(context.Background(), it, true)
					pause(300 * time.Microsecond)
				}
			})
		}
		for tp.Stats().Reaped.Load() < 50 {
			synctest.Wait() // every caller paused or waiting for a slot
			tp.clock.Step(50 * time.Microsecond)
		}
		close(stop)
		if err := tp.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d Gets returned a closed item", bad.Load())
		}
		tp.mu.Lock()
		defer tp.mu.Unlock()
		for i, it := range tp.items {
			if n := it.closes.Load(); n != 1 {
				t.Fatalf("item %d closed %d times, want 1", i, n)
			}
		}
		if s := tp.Stats(); s.Live.Load() != 0 || s.Reaped.Load() == 0 {
			t.Fatalf("live %d, reaped %d; want 0 and some reaped", s.Live.Load(), s.Reaped.Load())
		}
	})
}
