package runtime

import (
	"time"

	"github.com/wasmprov/wasmprov/internal/ratelimit"
)

// The pacing of a provider's outbound HTTP (Policy.HTTPRequestsPerSecond
// and the cloud's 429s) is per provider name, not per loaded version: a
// hot-swapped version inherits the token bucket and the backoff the
// cloud asked for, so a swap during a rate-limit storm does not start
// from a full bucket. The newest version's policy sets the rate.

// limiter returns the limiter of provider name, made on first use, with
// policy's rate; nil when policy does not pace (the version's requests go
// unpaced, and a cloud's 429 is the provider's own business, as without
// a host).
func (r *Runtime) limiter(name string, policy Policy) *ratelimit.Limiter {
	if policy.HTTPRequestsPerSecond <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limiters == nil {
		r.limiters = map[string]*ratelimit.Limiter{}
	}
	l, ok := r.limiters[name]
	if !ok {
		l = ratelimit.New(policy.HTTPRequestsPerSecond, policy.HTTPBurst, nil)
		r.limiters[name] = l
		return l
	}
	l.SetLimit(policy.HTTPRequestsPerSecond, policy.HTTPBurst)
	return l
}

// HTTPPacing is what pacing did to a provider's outbound HTTP requests,
// over every version of the provider loaded by this Runtime.
type HTTPPacing struct {
	// RequestsPerSecond and Burst are the limit in force (0: unpaced).
	RequestsPerSecond float64
	Burst             int
	// Waits counts requests that waited for the limit or a backoff,
	// Waited their total wait.
	Waits  int64
	Waited time.Duration
	// TooManyRequests counts 429 answers; Backoffs the answers that held
	// the provider's requests (429s, 503s with Retry-After, RateLimit
	// headers at 0).
	TooManyRequests int64
	Backoffs        int64
	// DeadlineExceeded counts requests not sent because their call's
	// deadline came first.
	DeadlineExceeded int64
}

// HTTPPacing reports the pacing of the provider's outbound HTTP (a
// native provider, whose requests bypass the host, reports zeros).
func (p *Provider) HTTPPacing() HTTPPacing {
	if p.env == nil || p.env.HTTP == nil {
		return HTTPPacing{}
	}
	l := p.env.HTTP.Limiter()
	if l == nil {
		return HTTPPacing{}
	}
	s := l.Stats()
	rps, burst := l.Limit()
	return HTTPPacing{RequestsPerSecond: rps, Burst: burst, Waits: s.Waits, Waited: s.Waited,
		TooManyRequests: s.TooManyRequests, Backoffs: s.Backoffs, DeadlineExceeded: s.DeadlineExceeded}
}
