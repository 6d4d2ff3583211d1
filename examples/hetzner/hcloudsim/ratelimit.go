package hcloudsim

import (
	"net/http"
	"strconv"
	"time"
)

// rateLimit spends one request of the budget and sets the RateLimit-*
// headers; it reports false when the budget is spent. Called with s.mu held.
func (s *Sim) rateLimit(w http.ResponseWriter, now time.Time) bool {
	limit := float64(s.opts.RateLimit)
	perSecond := limit / 3600
	s.remaining += now.Sub(s.lastRefill).Seconds() * perSecond
	if s.remaining > limit {
		s.remaining = limit
	}
	s.lastRefill = now
	ok := s.remaining >= 1
	if ok {
		s.remaining--
	}
	s.setRateHeaders(w, now)
	return ok
}

func (s *Sim) setRateHeaders(w http.ResponseWriter, now time.Time) {
	limit := float64(s.opts.RateLimit)
	untilFull := time.Duration((limit - s.remaining) / (limit / 3600) * float64(time.Second))
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
	h.Set("RateLimit-Remaining", strconv.Itoa(int(s.remaining)))
	h.Set("RateLimit-Reset", strconv.FormatInt(now.Add(untilFull).Unix(), 10))
}

// SetRateLimitRemaining sets the remaining request budget, e.g. to 0 to get
// 429s until it refills.
func (s *Sim) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining = float64(n)
	s.lastRefill = s.opts.Now()
}
