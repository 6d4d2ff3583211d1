package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tracked is an item that records how often it was closed and when it
// last became idle, so a test can tell a double close or an early reap.
type tracked struct {
	closes  atomic.Int32
	idleAt  atomic.Int64 // UnixNano of the last Put, set by the test
	closeAt atomic.Int64
}

func (t *tracked) Close(context.Context) error {
	t.closes.Add(1)
	t.closeAt.Store(time.Now().UnixNano())
	return nil
}

type trackedPool struct {
	*Pool[*tracked]
	mu    sync.Mutex
	items []*tracked
}

func newTrackedPool(max int, idle time.Duration) *trackedPool {
	tp := &trackedPool{}
	tp.Pool = New(max, func(context.Context) (*tracked, error) {
		it := &tracked{}
		tp.mu.Lock()
		tp.items = append(tp.items, it)
		tp.mu.Unlock()
		return it, nil
	}, WithIdleTimeout(context.Background(), idle))
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
	it.idleAt.Store(time.Now().UnixNano())
	tp.Put(context.Background(), it, true)
}

// waitLive waits until the pool has n live items.
func waitLive(t *testing.T, p *Pool[*tracked], n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Live.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("live %d, want %d", p.Stats().Live.Load(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Idle items are closed once idle for the timeout, every one of them (down
// to none), never before; the next Get makes a new one.
func TestIdleItemsAreReaped(t *testing.T) {
	const timeout = 30 * time.Millisecond
	tp := newTrackedPool(3, timeout)
	a, b := tp.get(t), tp.get(t)
	tp.put(a)
	tp.put(b)
	waitLive(t, tp.Pool, 0)
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
}

// An item in use is never reaped, however long the call; it is reaped
// once idle for the timeout after it is back.
func TestInUseItemIsNotReaped(t *testing.T) {
	const timeout = 10 * time.Millisecond
	tp := newTrackedPool(2, timeout)
	busy, idle := tp.get(t), tp.get(t)
	tp.put(idle)
	waitLive(t, tp.Pool, 1)
	time.Sleep(5 * timeout)
	if busy.closes.Load() != 0 || idle.closes.Load() != 1 {
		t.Fatalf("busy closed %d, idle closed %d; want 0, 1", busy.closes.Load(), idle.closes.Load())
	}
	if s := tp.Stats(); s.InUse.Load() != 1 || s.Live.Load() != 1 {
		t.Fatalf("in use %d, live %d; want 1, 1", s.InUse.Load(), s.Live.Load())
	}
	tp.put(busy)
	waitLive(t, tp.Pool, 0)
	if n := busy.closes.Load(); n != 1 {
		t.Fatalf("closed %d times, want 1", n)
	}
}

// Without an idle timeout nothing is reaped (the behaviour before it).
func TestNoIdleTimeoutKeepsItems(t *testing.T) {
	var c counted
	p := c.pool(2)
	p.Put(context.Background(), mustGet(t, p), true)
	time.Sleep(20 * time.Millisecond)
	if s := p.Stats(); s.Live.Load() != 1 || s.Reaped.Load() != 0 || p.reaper != nil {
		t.Fatalf("live %d, reaped %d, reaper armed %v; want 1, 0, false", s.Live.Load(), s.Reaped.Load(), p.reaper != nil)
	}
}

// Close stops the reaper: no timer stays armed, and a timer that would
// have fired after Close closes nothing a second time.
func TestCloseStopsReaper(t *testing.T) {
	for _, timeout := range []time.Duration{time.Hour, time.Millisecond} {
		tp := newTrackedPool(2, timeout)
		it := tp.get(t)
		tp.put(it)
		if err := tp.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		tp.mu.Lock()
		armed := tp.reaper != nil
		tp.mu.Unlock()
		if armed {
			t.Fatalf("timeout %v: the reaper is still armed after Close", timeout)
		}
		time.Sleep(10 * time.Millisecond)
		if n := it.closes.Load(); n != 1 {
			t.Fatalf("timeout %v: closed %d times, want 1", timeout, n)
		}
	}
}

// Reaping races with Get, Put and Close (go test -race): every item is
// closed exactly once, none while in use, and Close returns with none
// live.
func TestReapRacesGetPutClose(t *testing.T) {
	tp := newTrackedPool(3, 200*time.Microsecond)
	var wg sync.WaitGroup
	stop := make(chan struct{})
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
				time.Sleep(time.Duration(g%3) * 100 * time.Microsecond)
				tp.Put(context.Background(), it, true)
				time.Sleep(300 * time.Microsecond)
			}
		})
	}
	time.Sleep(150 * time.Millisecond)
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
}
