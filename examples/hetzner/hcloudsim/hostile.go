package hcloudsim

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The hostile cloud (issue 30): Options.LatencyP50/LatencyP99, ErrorRate,
// DropRate, LostAnswerRate and RequestsPerSecond/Burst shape every API
// request (not the
// /_sim/ control endpoints), decided when the request arrives, before the
// handler runs. ActionDurationP99 and BootDurationP99 jitter how long
// actions run and servers boot. All are off when zero.

// Names in Request.Fault of the answers the hostile options shaped.
const (
	FaultRequestsPerSecond = "requests-per-second"
	FaultErrorRate         = "error-rate"
	FaultDropRate          = "drop-rate"
	FaultLostAnswerRate    = "lost-answer-rate"
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// logNormal is a log-normal distribution of durations fitted to a median
// and a 99th percentile: ln(X) ~ N(mu, sigma²) with mu = ln(p50) and sigma
// = ln(p99/p50)/z99. It is always positive, right-skewed like a network's
// latency, and two numbers pin it down. With p99 <= p50 it is the constant
// p50 (sigma 0); with p50 <= 0 it is off (zero).
type logNormal struct {
	mu, sigma float64
	on        bool
}

func fitLogNormal(p50, p99 time.Duration) logNormal {
	if p50 <= 0 {
		return logNormal{}
	}
	d := logNormal{mu: math.Log(float64(p50)), on: true}
	if p99 > p50 {
		d.sigma = math.Log(float64(p99)/float64(p50)) / z99
	}
	return d
}

// at is the distribution's quantile at z standard deviations of the
// underlying normal: at(0) is the median, at(z99) the 99th percentile.
func (d logNormal) at(z float64) time.Duration {
	if !d.on {
		return 0
	}
	v := math.Round(math.Exp(d.mu + d.sigma*z))
	if v >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(v)
}

// sample draws from the distribution with rng.
func (d logNormal) sample(rng *rand.Rand) time.Duration {
	if !d.on {
		return 0
	}
	if d.sigma == 0 {
		return d.at(0)
	}
	return d.at(rng.NormFloat64())
}

// RequestStats counts what the simulator saw of the API requests (not the
// /_sim/ endpoints), by its clock (Options.Now).
type RequestStats struct {
	// Accepted is how many requests passed the request rate limit
	// (Options.RequestsPerSecond) — every request when there is none —
	// including those then failed by ErrorRate or DropRate.
	Accepted int64 `json:"accepted"`
	// RateLimited is how many requests the rate limit answered 429.
	RateLimited int64 `json:"rate_limited"`
	// Errors is how many requests ErrorRate answered with a 5xx.
	Errors int64 `json:"errors"`
	// Dropped is how many connections DropRate closed without an answer.
	Dropped int64 `json:"dropped"`
	// LostAnswers is how many requests LostAnswerRate let take effect,
	// then closed without an answer.
	LostAnswers int64 `json:"lost_answers"`
	// Abandoned is how many requests the client gave up during their
	// Latency delay; they had no effect.
	Abandoned int64 `json:"abandoned"`
	// MaxAcceptedPerSecond is the most requests accepted in any 1-second
	// window (sliding, not calendar seconds): with a rate limit it never
	// exceeds RequestsPerSecond + Burst.
	MaxAcceptedPerSecond int `json:"max_accepted_per_second"`
	// PerSecond counts accepted and rate-limited requests per calendar
	// second, oldest first, for the last hour of seconds that saw any.
	PerSecond []SecondCount `json:"per_second"`
}

// SecondCount is one second of RequestStats.PerSecond.
type SecondCount struct {
	Second      time.Time `json:"second"`
	Accepted    int       `json:"accepted"`
	RateLimited int       `json:"rate_limited"`
}

const maxPerSecond = 3600

// hostile is the state of the hostile options, under its own mutex (taken
// after s.mu when both are held, never before).
type hostile struct {
	mu      sync.Mutex
	rng     *rand.Rand
	latency logNormal
	action  logNormal
	boot    logNormal
	limiter *rate.Limiter
	stats   RequestStats
	// window holds the requests accepted in the last second, oldest
	// first, those at the same instant counted together; windowN is
	// their number.
	window   []stamp
	windowN  int
	errCodes []int
}

func newHostile(opts *Options) *hostile {
	seed := uint64(opts.Seed)
	if seed == 0 {
		seed = rand.Uint64()
	}
	h := &hostile{
		rng:      rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		latency:  fitLogNormal(opts.LatencyP50, opts.LatencyP99),
		errCodes: []int{500, 502, 503},
	}
	if opts.ActionDurationP99 > opts.ActionDuration {
		h.action = fitLogNormal(opts.ActionDuration, opts.ActionDurationP99)
	}
	if opts.BootDurationP99 > opts.BootDuration {
		h.boot = fitLogNormal(opts.BootDuration, opts.BootDurationP99)
	}
	if opts.RequestsPerSecond > 0 {
		h.limiter = rate.NewLimiter(rate.Limit(opts.RequestsPerSecond), opts.Burst)
	}
	return h
}

func clamp01(v float64) float64 {
	if v != v || v < 0 { // NaN or negative
		return 0
	}
	return math.Min(v, 1)
}

// decision is what the hostile options do to one request.
type decision struct {
	latency time.Duration
	// limited: answer 429 with header.
	limited bool
	header  http.Header
	// fault: the error or the drop, through the injected faults' path.
	fault *Fault
}

// decide rolls the hostile options for a request arriving now.
func (s *Sim) decide() decision {
	h := s.hostile
	h.mu.Lock()
	defer h.mu.Unlock()
	now := s.opts.Now()
	var d decision
	if h.limiter != nil && !h.limiter.AllowN(now, 1) {
		d.limited = true
		d.header = s.limitHeaders(now)
		h.stats.RateLimited++
		h.countSecond(now, false)
	} else {
		h.stats.Accepted++
		h.countSecond(now, true)
		h.countWindow(now)
	}
	d.latency = h.latency.sample(h.rng)
	if d.limited || s.opts.DropRate+s.opts.ErrorRate+s.opts.LostAnswerRate == 0 {
		return d
	}
	// One roll: [0, DropRate) drops, [DropRate, DropRate+ErrorRate)
	// errs, the next LostAnswerRate loses the answer, so each happens at
	// its own rate.
	switch u := h.rng.Float64(); {
	case u < s.opts.DropRate:
		d.fault = &Fault{Name: FaultDropRate, Drop: true}
	case u < s.opts.DropRate+s.opts.ErrorRate:
		d.fault = &Fault{Name: FaultErrorRate, Status: h.errCodes[h.rng.IntN(len(h.errCodes))]}
	case u < s.opts.DropRate+s.opts.ErrorRate+s.opts.LostAnswerRate:
		d.fault = &Fault{Name: FaultLostAnswerRate, Drop: true, After: true}
	}
	return d
}

// delayed counts a request once its latency is over: Abandoned when the
// client went during it, else Errors or Dropped if its decision says so.
func (h *hostile) delayed(d decision, served bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !served:
		h.stats.Abandoned++
	case d.fault == nil:
	case d.fault.Name == FaultDropRate:
		h.stats.Dropped++
	case d.fault.Name == FaultErrorRate:
		h.stats.Errors++
	case d.fault.Name == FaultLostAnswerRate:
		h.stats.LostAnswers++
	}
}

// limitHeaders are the headers of a 429 of the request rate limit:
// RateLimit-Limit is the bucket's size (Burst), RateLimit-Remaining the
// whole tokens left, RateLimit-Reset the Unix time it is full again, and
// Retry-After the seconds (rounded up) until the next token. Called with
// h.mu held.
func (s *Sim) limitHeaders(now time.Time) http.Header {
	lim := s.hostile.limiter
	tokens := lim.TokensAt(now)
	perSec := float64(lim.Limit())
	burst := lim.Burst()
	untilFull := time.Duration((float64(burst) - tokens) / perSec * float64(time.Second))
	retry := math.Ceil((1 - tokens) / perSec)
	if retry < 1 {
		retry = 1
	}
	remaining := int(math.Floor(tokens))
	if remaining < 0 {
		remaining = 0
	}
	reset := now.Add(untilFull)
	resetUnix := reset.Unix()
	if reset.After(time.Unix(resetUnix, 0)) {
		resetUnix++ // round up: full by then
	}
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(int(retry)))
	h.Set("RateLimit-Limit", strconv.Itoa(burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(resetUnix, 10))
	return h
}

type stamp struct {
	at time.Time
	n  int
}

// countWindow counts a request accepted now in the sliding 1-second window
// (now-1s, now] and raises MaxAcceptedPerSecond to it: the busiest window
// ends at an accepted request, so checking each one finds it. Called with
// h.mu held.
func (h *hostile) countWindow(now time.Time) {
	cut := now.Add(-time.Second)
	i := 0
	for i < len(h.window) && !h.window[i].at.After(cut) {
		h.windowN -= h.window[i].n
		i++
	}
	h.window = h.window[i:]
	if n := len(h.window); n > 0 && h.window[n-1].at.Equal(now) {
		h.window[n-1].n++
	} else {
		h.window = append(h.window, stamp{at: now, n: 1})
	}
	h.windowN++
	if h.windowN > h.stats.MaxAcceptedPerSecond {
		h.stats.MaxAcceptedPerSecond = h.windowN
	}
}

// countSecond counts a request in its calendar second. Called with h.mu
// held.
func (h *hostile) countSecond(now time.Time, accepted bool) {
	sec := now.Truncate(time.Second)
	n := len(h.stats.PerSecond)
	if n == 0 || !h.stats.PerSecond[n-1].Second.Equal(sec) {
		if n >= maxPerSecond {
			h.stats.PerSecond = append(h.stats.PerSecond[:0], h.stats.PerSecond[1:]...)
		}
		h.stats.PerSecond = append(h.stats.PerSecond, SecondCount{Second: sec})
		n = len(h.stats.PerSecond)
	}
	if accepted {
		h.stats.PerSecond[n-1].Accepted++
	} else {
		h.stats.PerSecond[n-1].RateLimited++
	}
}

// maxBuffered bounds the request body delay buffers.
const maxBuffered = 16 << 20

// delay waits d before the request is served, or until the client goes;
// it reports whether it waited d. It reads the request's body first: an
// HTTP/1 server only notices a closed connection (and cancels the
// request's context) once the body has been read.
func delay(r *http.Request, d time.Duration) bool {
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBuffered))
		if err != nil {
			return false
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	}
	return sleep(r.Context(), d)
}

// sleep waits d, or until ctx is done; it reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// RequestStats returns what the simulator counted of the API requests.
func (s *Sim) RequestStats() RequestStats {
	h := s.hostile
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.stats
	out.PerSecond = append([]SecondCount(nil), h.stats.PerSecond...)
	return out
}

// ResetRequestStats zeroes the counts of RequestStats (the rate limit's
// bucket is left as it is).
func (s *Sim) ResetRequestStats() {
	h := s.hostile
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats = RequestStats{}
	h.window, h.windowN = nil, 0
}

// actionDuration is how long a new action runs: ActionDuration, or drawn
// around it up to ActionDurationP99. Called with s.mu held.
func (s *Sim) actionDuration() time.Duration {
	return s.jitter(s.hostile.action, s.opts.ActionDuration)
}

// bootDuration is how long a new server boots: BootDuration, or drawn
// around it up to BootDurationP99. Called with s.mu held.
func (s *Sim) bootDuration() time.Duration {
	return s.jitter(s.hostile.boot, s.opts.BootDuration)
}

func (s *Sim) jitter(d logNormal, fixed time.Duration) time.Duration {
	if !d.on {
		return fixed
	}
	h := s.hostile
	h.mu.Lock()
	defer h.mu.Unlock()
	return d.sample(h.rng)
}
