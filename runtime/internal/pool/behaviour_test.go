package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// counted is a pool of items that count their closes, and a newItem that
// counts its calls and fails while fail is set.
type counted struct {
	closed, made atomic.Int64
	fail         atomic.Bool
}

var errMake = errors.New("instantiate failed")

func (c *counted) newItem(context.Context) (item, error) {
	if c.fail.Load() {
		return item{}, errMake
	}
	c.made.Add(1)
	return item{&c.closed}, nil
}

func (c *counted) pool(max int) *Pool[item] { return New(max, c.newItem) }

func mustGet(t *testing.T, p *Pool[item]) item {
	t.Helper()
	it, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// At most Max items exist: with every one in use, Get waits until one is
// back, then reuses it rather than making another. (In a synctest bubble:
// synctest.Wait returns once the third Get is blocked, or has returned.)
func TestCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counted
		p := c.pool(2)
		a, b := mustGet(t, p), mustGet(t, p)
		got := make(chan item, 1)
		go func() { got <- mustGet(t, p) }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a third Get returned while both items were in use")
		default:
		}
		p.Put(context.Background(), a, true)
		synctest.Wait()
		select {
		case <-got:
		default:
			t.Fatal("the waiting Get did not get the returned item")
		}
		p.Put(context.Background(), b, true)
		if n := c.made.Load(); n != 2 {
			t.Errorf("%d items made, want 2", n)
		}
		if s := p.Stats(); s.InUse.Load() != 1 || s.Live.Load() != 2 {
			t.Errorf("in use %d, live %d; want 1, 2", s.InUse.Load(), s.Live.Load())
		}
	})
}

// A Get waiting on a full pool gives up with its context's cause.
func TestGetWaitsUntilItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counted
		p := c.pool(1)
		mustGet(t, p)
		cause := errors.New("the caller gave up")
		ctx, cancel := context.WithCancelCause(context.Background())
		errs := make(chan error, 1)
		go func() { _, err := p.Get(ctx); errs <- err }()
		synctest.Wait() // the Get is waiting for the slot
		select {
		case err := <-errs:
			t.Fatalf("Get on a full pool returned before its context ended: %v", err)
		default:
		}
		cancel(cause)
		if err := <-errs; !errors.Is(err, cause) {
			t.Fatalf("Get = %v, want the context's cause", err)
		}
	})
}

// An unhealthy item is closed and counted, never handed out again; the
// next Get makes a new one.
func TestPutUnhealthyDiscards(t *testing.T) {
	var c counted
	p := c.pool(1)
	p.Put(context.Background(), mustGet(t, p), false)
	if c.closed.Load() != 1 || p.Stats().Discarded.Load() != 1 || p.Stats().Live.Load() != 0 {
		t.Fatalf("closed %d, discarded %d, live %d; want 1, 1, 0", c.closed.Load(), p.Stats().Discarded.Load(), p.Stats().Live.Load())
	}
	mustGet(t, p)
	if n := c.made.Load(); n != 2 {
		t.Errorf("%d items made, want a new one after the discard", n)
	}
}

// Retire closes a healthy item that is done, without counting it as
// discarded, and frees its slot.
func TestRetire(t *testing.T) {
	var c counted
	p := c.pool(1)
	p.Retire(context.Background(), mustGet(t, p))
	if c.closed.Load() != 1 || p.Stats().Discarded.Load() != 0 || p.Stats().Live.Load() != 0 {
		t.Fatalf("closed %d, discarded %d, live %d; want 1, 0, 0", c.closed.Load(), p.Stats().Discarded.Load(), p.Stats().Live.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Get(ctx); err != nil {
		t.Fatalf("Get after Retire: %v (slot not freed?)", err)
	}
}

// A failed instantiation frees its slot: the pool does not shrink by one
// for every failure.
func TestNewItemErrorFreesTheSlot(t *testing.T) {
	var c counted
	p := c.pool(1)
	c.fail.Store(true)
	for range 3 {
		if _, err := p.Get(context.Background()); !errors.Is(err, errMake) {
			t.Fatalf("Get = %v, want the instantiation error", err)
		}
	}
	c.fail.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.Get(ctx); err != nil {
		t.Fatalf("Get after failures: %v", err)
	}
	if s := p.Stats(); s.Created.Load() != 1 || s.Live.Load() != 1 {
		t.Errorf("created %d, live %d; want 1, 1", s.Created.Load(), s.Live.Load())
	}
}

// Close wakes every Get waiting for a slot with ErrClosed, and Drained
// follows once the items in use are back.
func TestCloseWakesWaitingCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c counted
		p := c.pool(1)
		inUse := mustGet(t, p)
		const waiters = 4
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				_, err := p.Get(context.Background())
				errs <- err
			}()
		}
		synctest.Wait() // every waiter is blocked on the slot
		if n := len(errs); n != 0 {
			t.Fatalf("%d Gets returned from a full pool", n)
		}
		closeDone := make(chan error, 1)
		go func() { closeDone <- p.Close(context.Background()) }()
		synctest.Wait()
		if n := len(errs); n != waiters {
			t.Fatalf("Close woke %d of the %d waiting Gets", n, waiters)
		}
		for range waiters {
			if err := <-errs; !errors.Is(err, ErrClosed) {
				t.Errorf("a waiting Get = %v, want ErrClosed", err)
			}
		}
		select {
		case err := <-closeDone:
			t.Fatalf("Close returned (%v) with an item in use", err)
		default:
		}
		p.Put(context.Background(), inUse, true)
		synctest.Wait()
		select {
		case err := <-closeDone:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Close did not return after the last item came back")
		}
		if n := c.closed.Load(); n != 1 {
			t.Errorf("%d items closed, want 1", n)
		}
	})
}

// Adopt never makes the pool hold more than Max items, idle ones included.
func TestAdoptRespectsTheCap(t *testing.T) {
	var c counted
	p := c.pool(2)
	for i := range 2 {
		if !p.Adopt(item{&c.closed}) {
			t.Fatalf("Adopt %d refused below the cap", i+1)
		}
	}
	if p.Adopt(item{&c.closed}) {
		t.Fatal("a third Adopt accepted: three items in a pool of two")
	}
	a := mustGet(t, p)
	if p.Adopt(item{&c.closed}) {
		t.Fatal("Adopt accepted with one item idle and one in use")
	}
	p.Put(context.Background(), a, true)
	if n := p.Stats().Live.Load(); n != 2 {
		t.Errorf("live %d, want 2", n)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Adopt(item{&c.closed}) {
		t.Error("Adopt accepted after Close")
	}
}

// Warm fills the pool up to n idle items once; warming again makes none.
func TestWarm(t *testing.T) {
	var c counted
	p := c.pool(3)
	if err := p.Warm(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if err := p.Warm(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); c.made.Load() != 2 || s.Live.Load() != 2 || s.InUse.Load() != 0 {
		t.Errorf("made %d, live %d, in use %d; want 2, 2, 0", c.made.Load(), s.Live.Load(), s.InUse.Load())
	}
	if err := p.Warm(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if n := c.made.Load(); n != 3 {
		t.Errorf("Warm(10) on a pool of 3: %d made, want 3", n)
	}
}
