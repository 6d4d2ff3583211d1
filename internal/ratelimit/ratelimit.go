// Package ratelimit paces a provider's outbound HTTP requests in the
// host, where every request of every instance of every version of the
// provider passes: a token bucket (golang.org/x/time/rate) for the
// requests per second its policy allows, and the backoff the cloud asks
// for — a 429 (or a 503 with Retry-After), or RateLimit-Remaining 0 with
// RateLimit-Reset — which holds every request of the provider until it
// has passed, not only the one that was answered.
//
// A wait counts against the call's deadline: a request that could not
// leave before the deadline fails at once (ErrDeadline) instead of
// sleeping into it, and a cancelled call stops waiting.
package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// MaxBackoff caps how long one answer of the cloud may hold a provider's
// requests: a Retry-After of a day (or a RateLimit-Reset far in the
// future) is read as this.
const MaxBackoff = 10 * time.Minute

// DefaultTooManyBackoff is the backoff after a 429 that says nothing of
// when to come back.
const DefaultTooManyBackoff = time.Second

// ErrDeadline is returned (wrapped) by Wait when the request could not
// leave before the context's deadline.
var ErrDeadline = errors.New("rate limited: the call's deadline comes before the request may be sent")

// Limiter paces the requests of one provider. The zero value is not
// usable; New makes one. It is safe for concurrent use.
type Limiter struct {
	clock clock.Clock

	mu     sync.Mutex
	bucket *rate.Limiter // nil: no requests-per-second limit
	until  time.Time     // no request leaves before this (the cloud's backoff)

	waits     atomic.Int64 // requests that waited
	waitedNs  atomic.Int64 // total time requests waited
	tooMany   atomic.Int64 // 429 answers
	backoffs  atomic.Int64 // answers that set a backoff
	deadlined atomic.Int64 // requests refused because the deadline came first
}

// Stats are a Limiter's counters since New.
type Stats struct {
	// Waits is the number of requests that waited, Waited their total wait.
	Waits  int64
	Waited time.Duration
	// TooManyRequests counts 429 answers; Backoffs the answers that held
	// the provider's requests (429s and RateLimit headers).
	TooManyRequests int64
	Backoffs        int64
	// DeadlineExceeded counts requests refused because they could not
	// leave before their call's deadline.
	DeadlineExceeded int64
}

// New returns a Limiter allowing rps requests per second with bursts of
// burst (rps <= 0: no per-second limit; burst < 1 is 1). clk nil is the
// real clock.
func New(rps float64, burst int, clk clock.Clock) *Limiter {
	if clk == nil {
		clk = clock.RealClock{}
	}
	l := &Limiter{clock: clk}
	l.SetLimit(rps, burst)
	return l
}

// SetLimit changes the requests-per-second limit (a new version of the
// provider may bring a new policy); the cloud's backoff in force and the
// counters are kept.
func (l *Limiter) SetLimit(rps float64, burst int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rps <= 0 {
		l.bucket = nil
		return
	}
	burst = max(burst, 1)
	if l.bucket == nil {
		l.bucket = rate.NewLimiter(rate.Limit(rps), burst)
		return
	}
	now := l.clock.Now()
	l.bucket.SetLimitAt(now, rate.Limit(rps))
	l.bucket.SetBurstAt(now, burst)
}

// Limit returns the requests-per-second limit and burst (0, 0: none).
func (l *Limiter) Limit() (float64, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bucket == nil {
		return 0, 0
	}
	return float64(l.bucket.Limit()), l.bucket.Burst()
}

// Wait blocks until a request may leave: after the cloud's backoff, with
// a token of the bucket. It returns how long it waited. If ctx's deadline
// comes before the request could leave, it returns at once with an error
// wrapping ErrDeadline; if ctx ends while it waits, with ctx's error.
func (l *Limiter) Wait(ctx context.Context) (time.Duration, error) {
	start := l.clock.Now()
	for {
		now := l.clock.Now()
		d, r := l.reserve(now)
		if d <= 0 {
			l.account(start, now)
			return now.Sub(start), nil
		}
		if deadline, ok := ctx.Deadline(); ok && now.Add(d).After(deadline) {
			if r != nil {
				r.CancelAt(now)
			}
			l.deadlined.Add(1)
			return now.Sub(start), ErrDeadline
		}
		if err := l.sleep(ctx, d); err != nil {
			if r != nil {
				r.CancelAt(l.clock.Now())
			}
			return l.clock.Now().Sub(start), err
		}
		if r != nil {
			// The token is ours, and the backoff is checked again:
			// the cloud may have asked for one while this request slept.
			if b := l.backoff(l.clock.Now()); b <= 0 {
				now = l.clock.Now()
				l.account(start, now)
				return now.Sub(start), nil
			}
			r.CancelAt(l.clock.Now())
		}
	}
}

// reserve returns how long a request arriving at now must wait: the
// cloud's backoff if one is in force (no token is taken: the bucket is
// asked once it has passed), else the bucket's delay, with its
// reservation.
func (l *Limiter) reserve(now time.Time) (time.Duration, *rate.Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.until.Sub(now); d > 0 {
		return d, nil
	}
	if l.bucket == nil {
		return 0, nil
	}
	r := l.bucket.ReserveN(now, 1)
	return r.DelayFrom(now), r
}

func (l *Limiter) backoff(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until.Sub(now)
}

func (l *Limiter) account(start, now time.Time) {
	if w := now.Sub(start); w > 0 {
		l.waits.Add(1)
		l.waitedNs.Add(int64(w))
	}
}

func (l *Limiter) sleep(ctx context.Context, d time.Duration) error {
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Observe reads the status and headers of a response the provider got:
// a 429 holds the provider's requests for its Retry-After (default
// DefaultTooManyBackoff), a 503 with Retry-After for that, and any answer
// with RateLimit-Remaining 0 until its RateLimit-Reset (seconds from now,
// or a Unix time as Hetzner sends it). A backoff never shortens one in
// force and is capped at MaxBackoff.
func (l *Limiter) Observe(status int, h http.Header) {
	now := l.clock.Now()
	var d time.Duration
	retryAfter, hasRetryAfter := parseRetryAfter(h.Get("Retry-After"), now)
	switch {
	case status == http.StatusTooManyRequests:
		l.tooMany.Add(1)
		d = DefaultTooManyBackoff
		if hasRetryAfter {
			d = retryAfter
		}
	case status == http.StatusServiceUnavailable && hasRetryAfter:
		d = retryAfter
	}
	if h.Get("RateLimit-Remaining") == "0" {
		if reset, ok := parseReset(h.Get("RateLimit-Reset"), now); ok {
			d = max(d, reset)
		}
	}
	if d <= 0 {
		return
	}
	d = min(d, MaxBackoff)
	l.backoffs.Add(1)
	l.mu.Lock()
	if until := now.Add(d); until.After(l.until) {
		l.until = until
	}
	l.mu.Unlock()
}

// Stats returns the counters.
func (l *Limiter) Stats() Stats {
	return Stats{Waits: l.waits.Load(), Waited: time.Duration(l.waitedNs.Load()),
		TooManyRequests: l.tooMany.Load(), Backoffs: l.backoffs.Load(), DeadlineExceeded: l.deadlined.Load()}
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, int64(MaxBackoff/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// unixTimeFloor tells a RateLimit-Reset that is a Unix time (Hetzner's)
// from one that is a number of seconds (the IETF draft's).
const unixTimeFloor = 1_000_000_000

func parseReset(v string, now time.Time) (time.Duration, bool) {
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil || s < 0 {
		return 0, false
	}
	if s >= unixTimeFloor {
		return max(time.Unix(s, 0).Sub(now), 0), true
	}
	return time.Duration(min(s, int64(MaxBackoff/time.Second))) * time.Second, true
}
