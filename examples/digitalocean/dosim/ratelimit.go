package dosim

import (
	"net/http"
	"strconv"
	"time"
)

// rateState counts requests in DigitalOcean's two windows: the hourly
// budget the RateLimit-* headers describe, and the burst limit per minute.
type rateState struct {
	hourStart, minuteStart time.Time
	hourCount, minuteCount int
}

// rateLimit spends one request and sets the RateLimit-* headers. When a
// budget is spent it reports false and how many seconds to wait (the
// answer's Retry-After). Called with s.mu held.
func (s *Sim) rateLimit(h http.Header, now time.Time) (retryAfter int, ok bool) {
	st := &s.rate
	if st.hourStart.IsZero() || !now.Before(st.hourStart.Add(time.Hour)) {
		st.hourStart, st.hourCount = now, 0
	}
	if st.minuteStart.IsZero() || !now.Before(st.minuteStart.Add(time.Minute)) {
		st.minuteStart, st.minuteCount = now, 0
	}
	var wait time.Duration
	switch {
	case st.hourCount >= s.opts.HourlyLimit:
		wait = st.hourStart.Add(time.Hour).Sub(now)
	case st.minuteCount >= s.opts.BurstLimit:
		wait = st.minuteStart.Add(time.Minute).Sub(now)
	default:
		st.hourCount++
		st.minuteCount++
	}
	s.rateHeaders(h)
	if wait > 0 {
		return int((wait + time.Second - 1) / time.Second), false
	}
	return 0, true
}

// rateHeaders sets the RateLimit-* headers of the hourly budget. Called
// with s.mu held.
func (s *Sim) rateHeaders(h http.Header) {
	if s.rate.hourStart.IsZero() {
		s.rate.hourStart = s.opts.Now()
	}
	h.Set("RateLimit-Limit", strconv.Itoa(s.opts.HourlyLimit))
	h.Set("RateLimit-Remaining", strconv.Itoa(s.opts.HourlyLimit-s.rate.hourCount))
	h.Set("RateLimit-Reset", strconv.FormatInt(s.rate.hourStart.Add(time.Hour).Unix(), 10))
}

// SetRateLimitRemaining sets what is left of the hourly budget, e.g. 0 to
// get 429s until the window ends.
func (s *Sim) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rate.hourStart.IsZero() {
		s.rate.hourStart = s.opts.Now()
	}
	s.rate.hourCount = max(s.opts.HourlyLimit-n, 0)
}
