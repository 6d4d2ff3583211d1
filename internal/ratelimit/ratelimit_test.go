package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// waitAsync runs Wait in a goroutine; the result arrives on the channel.
type waitResult struct {
	waited time.Duration
	err    error
}

func waitAsync(ctx context.Context, l *Limiter) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		w, err := l.Wait(ctx)
		ch <- waitResult{w, err}
	}()
	return ch
}

// stepUntilDone steps the fake clock by step until the wait returns.
func stepUntilDone(t *testing.T, clk *clocktesting.FakeClock, ch <-chan waitResult, step time.Duration) waitResult {
	t.Helper()
	for range 10000 {
		select {
		case r := <-ch:
			return r
		default:
		}
		if clk.HasWaiters() {
			clk.Step(step)
		} else {
			time.Sleep(time.Millisecond) // the waiter is not asleep yet
		}
	}
	t.Fatal("Wait never returned")
	return waitResult{}
}

// The bucket lets a burst through at once, then one request per
// 1/rps; the waits are counted.
func TestBucket(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	l := New(10, 2, clk)
	for i := range 2 {
		if w, err := l.Wait(context.Background()); err != nil || w != 0 {
			t.Fatalf("burst request %d: waited %v, %v", i, w, err)
		}
	}
	r := stepUntilDone(t, clk, waitAsync(context.Background(), l), 10*time.Millisecond)
	if r.err != nil || r.waited != 100*time.Millisecond {
		t.Fatalf("third request: waited %v, %v; want 100ms (10/s)", r.waited, r.err)
	}
	if s := l.Stats(); s.Waits != 1 || s.Waited != 100*time.Millisecond {
		t.Fatalf("stats %+v", s)
	}
}

// A 429 with Retry-After holds every request for that long, a 429
// without one for DefaultTooManyBackoff; a shorter backoff never
// shortens a longer one.
func TestTooManyRequestsBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	l := New(0, 0, clk) // no per-second limit: only the cloud's backoff
	l.Observe(http.StatusTooManyRequests, http.Header{"Retry-After": {"3"}})
	l.Observe(http.StatusTooManyRequests, http.Header{})
	r := stepUntilDone(t, clk, waitAsync(context.Background(), l), 100*time.Millisecond)
	if r.err != nil || r.waited != 3*time.Second {
		t.Fatalf("waited %v, %v; want 3s", r.waited, r.err)
	}
	l.Observe(http.StatusTooManyRequests, http.Header{})
	r = stepUntilDone(t, clk, waitAsync(context.Background(), l), 100*time.Millisecond)
	if r.waited != DefaultTooManyBackoff {
		t.Fatalf("429 without Retry-After: waited %v", r.waited)
	}
	if s := l.Stats(); s.TooManyRequests != 3 || s.Backoffs != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// The headers a cloud sends: Retry-After as a date; RateLimit-Remaining 0
// with a RateLimit-Reset in seconds or, as Hetzner sends it, a Unix time;
// a 503 only with Retry-After; a 200 without RateLimit headers nothing; a
// day's Retry-After capped.
func TestObserveHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		h      http.Header
		want   time.Duration
	}{
		{"Retry-After date", 429, http.Header{"Retry-After": {t0.Add(5 * time.Second).Format(http.TimeFormat)}}, 5 * time.Second},
		{"RateLimit-Reset seconds", 200, http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"7"}}, 7 * time.Second},
		{"RateLimit-Reset unix", 200, http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {strconv.FormatInt(t0.Add(9*time.Second).Unix(), 10)}}, 9 * time.Second},
		{"remaining left", 200, http.Header{"Ratelimit-Remaining": {"12"}, "Ratelimit-Reset": {"7"}}, 0},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{"503 without", 503, http.Header{}, 0},
		{"a day", 429, http.Header{"Retry-After": {"86400"}}, MaxBackoff},
		{"garbage", 429, http.Header{"Retry-After": {"soon"}}, DefaultTooManyBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			l := New(0, 0, clk)
			l.Observe(tc.status, tc.h)
			if got := l.backoff(clk.Now()); got != tc.want && !(tc.want == 0 && got <= 0) {
				t.Fatalf("backoff %v, want %v", got, tc.want)
			}
		})
	}
}

// A request that cannot leave before its deadline fails at once, without
// sleeping into the deadline; a cancelled wait stops.
func TestWaitRespectsDeadlineAndCancel(t *testing.T) {
	// Context deadlines are wall-clock times: the fake clock starts at the
	// real now so that they compare.
	clk := clocktesting.NewFakeClock(time.Now())
	l := New(1, 1, clk)
	if _, err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(5*time.Minute))
	defer cancel()
	l.Observe(429, http.Header{"Retry-After": {"600"}}) // longer than the 5 minutes left
	if _, err := l.Wait(ctx); !errors.Is(err, ErrDeadline) {
		t.Fatalf("wait past the deadline: %v, want ErrDeadline at once", err)
	}
	if s := l.Stats(); s.DeadlineExceeded != 1 {
		t.Fatalf("stats %+v", s)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	ch := waitAsync(ctx2, l)
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	cancel2()
	if r := <-ch; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", r.err)
	}
}

// SetLimit changes the rate and keeps the backoff in force (a new version
// of the provider brings a new policy).
func TestSetLimitKeepsBackoff(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	l := New(5, 1, clk)
	l.Observe(429, http.Header{"Retry-After": {"4"}})
	l.SetLimit(20, 3)
	if rps, burst := l.Limit(); rps != 20 || burst != 3 {
		t.Fatalf("limit %v/%d", rps, burst)
	}
	if d := l.backoff(clk.Now()); d != 4*time.Second {
		t.Fatalf("backoff after SetLimit %v", d)
	}
	l.SetLimit(0, 0)
	if rps, _ := l.Limit(); rps != 0 {
		t.Fatalf("limit removed: %v", rps)
	}
}
