package workers_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/controller/internal/workers"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// start runs n workers of r over a queue on a fake clock until the test
// ends, and returns the clock and the queue.
func start(t *testing.T, n int, r reconcile.Func) (*clocktesting.FakeClock, workers.Queue) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	q := workers.NewQueue("test", clk)
	c, err := workers.New("test", q, n, slog.New(slog.DiscardHandler), r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(cancel)
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	return clk, q
}

// TestRequeueAfterRunsOnTheQueuesClock: a reconcile's RequeueAfter is
// timed by the clock the queue was made with, so a test steps it instead
// of waiting.
func TestRequeueAfterRunsOnTheQueuesClock(t *testing.T) {
	calls := make(chan reconcile.Request, 10)
	var n atomic.Int32
	clk, q := start(t, 2, func(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
		calls <- r
		if n.Add(1) == 1 {
			return reconcile.Result{RequeueAfter: time.Hour}, nil
		}
		return reconcile.Result{}, nil
	})
	q.Add(req("a"))
	if got := <-calls; got != req("a") {
		t.Fatalf("first reconcile of %v, want ns/a", got)
	}
	// The requeue is an hour away on the fake clock: it comes once the
	// clock is stepped past it, not after an hour of real time. (The
	// clock is stepped until then: the queue registers the delay on its
	// own goroutine, maybe after a first step.)
	if got := stepUntil(t, clk, time.Hour, calls); got != req("a") {
		t.Fatalf("second reconcile of %v, want ns/a", got)
	}
}

// stepUntil steps clk by d every few milliseconds until calls yields.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, d time.Duration, calls <-chan reconcile.Request) reconcile.Request {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case got := <-calls:
			return got
		case <-tick.C:
			clk.Step(d)
		case <-t.Context().Done():
			t.Fatal("no reconcile")
		}
	}
}

// TestPanicIsRecoveredAndRetried: a reconciler that panics does not take
// the process down; the key is retried.
func TestPanicIsRecoveredAndRetried(t *testing.T) {
	var n atomic.Int32
	calls := make(chan reconcile.Request, 10)
	clk, q := start(t, 1, func(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
		if n.Add(1) == 1 {
			panic("provider bug")
		}
		calls <- r
		return reconcile.Result{}, nil
	})
	q.Add(req("b"))
	// The retry after the panic is rate limited on the queue's clock.
	if got := stepUntil(t, clk, time.Second, calls); got != req("b") {
		t.Fatalf("retried %v, want ns/b", got)
	}
}
