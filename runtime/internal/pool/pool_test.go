package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type item struct{ closed *atomic.Int64 }

func (i item) Close(context.Context) error { i.closed.Add(1); return nil }

// TestCloseWithCallsInFlight: Close whose context ends before an item in
// use is back returns the context's error and leaves the item alone;
// Drained closes only once that item is back and closed, so its owner
// knows when shared resources (the module) may go.
func TestCloseWithCallsInFlight(t *testing.T) {
	// In a synctest bubble: the 20ms of the Close are on its fake clock.
	synctest.Test(t, func(t *testing.T) {
		var closed atomic.Int64
		p := New(2, func(context.Context) (item, error) { return item{&closed}, nil })
		ctx := context.Background()
		inUse, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		idle, _ := p.Get(ctx)
		p.Put(ctx, idle, true)

		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if err := p.Close(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want DeadlineExceeded", err)
		}
		if n := closed.Load(); n != 1 {
			t.Fatalf("%d items closed, want only the idle one", n)
		}
		select {
		case <-p.Drained():
			t.Fatal("Drained while an item is in use")
		default:
		}
		if _, err := p.Get(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close = %v, want ErrClosed", err)
		}
		p.Put(ctx, inUse, true)
		synctest.Wait() // the drain took the slot the item freed
		select {
		case <-p.Drained():
		default:
			t.Fatal("not Drained after the last item came back")
		}
		if n := closed.Load(); n != 2 {
			t.Fatalf("%d items closed, want 2", n)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatalf("second Close = %v", err)
		}
	})
}
