// Package hcloudsim is an in-process simulator of the subset of the Hetzner
// Cloud API that a machine-controller provider uses: servers, server types,
// locations, datacenters, images, SSH keys, volumes, actions, placement
// groups, networks, firewalls and floating IPs.
//
// It follows the public API reference: the same paths and JSON shapes,
// error objects ({"error":{"code","message","details"}}), label selectors,
// pagination (page/per_page and meta.pagination), bearer-token auth, the
// RateLimit-* headers with 429 rate_limit_exceeded when the budget is spent,
// and actions whose status moves from running to success over time, as a
// server moves from initializing to running. Deletion is asynchronous, as
// Hetzner's: DELETE /servers/{id} answers a running action and the server
// stays listed as "deleting" for a while (DeleteDelay, or a number of reads
// with DeleteReads) before it disappears.
//
// Options make it a hostile cloud: LatencyP50/LatencyP99, ErrorRate,
// DropRate, RequestsPerSecond/Burst (429 with Retry-After, counted by
// RequestStats), ActionDurationP99 and BootDurationP99, reproducible with
// Seed.
//
// Tests steer it with Inject (latency, 5xx, 429, garbage or truncated
// bodies, dropped connections, before or after the real handler ran) and
// read its state with Servers, Volumes, SSHKeys and Requests. Start
// serves it on 127.0.0.1, and cmd/hcloudsim is a command around it.
package hcloudsim

import (
	"math"
	"sync"
	"time"
)

// Options configure a Sim. Zero values take the defaults.
type Options struct {
	// Token is the API token clients must send as "Authorization: Bearer".
	// Default "sim-token".
	Token string
	// ReadOnlyTokens are accepted for GET requests and answered with 403
	// token_readonly for anything else, like a read-only API token.
	ReadOnlyTokens []string
	// ActionDuration is how long an action stays "running" (default 200ms).
	ActionDuration time.Duration
	// BootDuration is how long a new server stays "initializing" (default
	// 500ms).
	BootDuration time.Duration
	// DeleteDelay is how long a deleted server stays listed with status
	// "deleting" before it disappears, and its delete_server action
	// "running" (default ActionDuration). Negative: it disappears with the
	// DELETE answer, whose action has succeeded already.
	DeleteDelay time.Duration
	// DeleteReads, when positive, replaces DeleteDelay by a count that
	// does not depend on the clock: a deleted server is in the answers of
	// DeleteReads reads (GET /servers listings and GET /servers/{id} that
	// would show it) as "deleting", and gone from the next one on. Tests
	// use it to see a provider's Delete find the server deleting on a
	// given call.
	DeleteReads int
	// RateLimit is the request budget per hour (default 3600, as Hetzner's
	// default project limit); the budget refills evenly over the hour.
	RateLimit int
	// Now is the clock (default time.Now).
	Now func() time.Time

	// The hostile cloud (issue 30). Each is off when zero. They shape API
	// requests (not /_sim/), decided when a request arrives, before the
	// handler runs; a request they fail has no effect. Their order: the
	// request rate limit (RequestsPerSecond), then the latency, then one
	// roll for DropRate or ErrorRate, then the injected faults (Inject)
	// and the handler.

	// LatencyP50 and LatencyP99 delay every API request by a random
	// duration: log-normal with that median and 99th percentile (ln of
	// the delay is normal with mean ln(P50) and standard deviation
	// ln(P99/P50)/2.326), a positive right-skewed latency pinned by two
	// numbers. LatencyP50 > 0 turns it on; LatencyP99 <= LatencyP50 makes
	// it the constant LatencyP50. The delay is real time, whatever Now,
	// and ends early when the client goes away (the request then has no
	// effect; RequestStats counts it Abandoned).
	LatencyP50 time.Duration
	LatencyP99 time.Duration
	// ErrorRate (0..1) is the fraction of API requests answered with a
	// 500 server_error, 502 bad_gateway or 503 unavailable (equally
	// likely) Hetzner error object, without running the handler.
	ErrorRate float64
	// DropRate (0..1) is the fraction of API requests whose connection is
	// closed without an answer (as Fault{Drop: true}), without running the
	// handler. With ErrorRate, one roll decides: a request drops with
	// probability DropRate, errs with probability ErrorRate (what is left
	// of it when the two add up to more than 1).
	DropRate float64
	// LostAnswerRate (0..1) is the fraction of API requests that take
	// effect (the handler runs: a server is made, an action started) and
	// whose connection is then closed without an answer (as Fault{Drop:
	// true, After: true}): the client cannot tell it from DropRate's,
	// and a retry that does not look first makes a second server. It
	// shares the roll of ErrorRate and DropRate, after them.
	LostAnswerRate float64
	// RequestsPerSecond, when positive, is a token bucket over all API
	// requests, refilled at that rate and holding Burst tokens (default
	// RequestsPerSecond rounded up). A request finding it empty is
	// answered 429 rate_limit_exceeded with Retry-After (seconds to the
	// next token, rounded up), RateLimit-Limit (Burst),
	// RateLimit-Remaining (0) and RateLimit-Reset (Unix time it is full).
	// It follows Now. It comes on top of RateLimit, the hourly budget,
	// whose RateLimit-* headers the other answers carry. RequestStats
	// counts what it accepted and refused.
	RequestsPerSecond float64
	Burst             int
	// ActionDurationP99, when above ActionDuration, makes each action's
	// duration random: log-normal with median ActionDuration and this
	// 99th percentile (as the latency).
	ActionDurationP99 time.Duration
	// BootDurationP99, when above BootDuration, makes each server's boot
	// random the same way around BootDuration.
	BootDurationP99 time.Duration
	// Seed seeds the random choices above, for reproducible runs (0: a
	// random seed).
	Seed int64
}

// Sim is the simulated API. It is an http.Handler; mount it at the root,
// the API lives under /v1.
type Sim struct {
	opts Options

	mu          sync.Mutex
	nextID      int64
	locations   []Location
	datacenters []Datacenter
	serverTypes []ServerType
	images      []Image
	servers     map[int64]*server
	sshKeys     map[int64]*SSHKey
	volumes     map[int64]*Volume
	// placementGroups, networks, firewalls and floatingIPs: topology.go.
	placementGroups map[int64]*PlacementGroup
	networks        map[int64]*Network
	firewalls       map[int64]*Firewall
	floatingIPs     map[int64]*FloatingIP
	actions         map[int64]*action
	faults          []*faultEntry
	requests        []Request
	stuck           map[string]bool
	autoDetach      []int64
	remaining       float64
	lastRefill      time.Time
	maxRequests     int
	hostile         *hostile
}

// New returns a simulator seeded with Hetzner's public catalogue: locations
// fsn1, nbg1, hel1, ash, hil, sin; their datacenters; shared and dedicated
// server types; and system images for x86 and arm.
func New(opts Options) *Sim {
	if opts.Token == "" {
		opts.Token = "sim-token"
	}
	if opts.ActionDuration <= 0 {
		opts.ActionDuration = 200 * time.Millisecond
	}
	if opts.BootDuration <= 0 {
		opts.BootDuration = 500 * time.Millisecond
	}
	if opts.DeleteDelay == 0 {
		opts.DeleteDelay = opts.ActionDuration
	}
	if opts.RateLimit <= 0 {
		opts.RateLimit = 3600
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.ErrorRate, opts.DropRate = clamp01(opts.ErrorRate), clamp01(opts.DropRate)
	if opts.ErrorRate+opts.DropRate > 1 {
		opts.ErrorRate = 1 - opts.DropRate
	}
	opts.LostAnswerRate = math.Min(clamp01(opts.LostAnswerRate), 1-opts.ErrorRate-opts.DropRate)
	if opts.RequestsPerSecond > 0 && opts.Burst <= 0 {
		opts.Burst = int(math.Ceil(opts.RequestsPerSecond))
	}
	s := &Sim{
		opts:            opts,
		nextID:          1000,
		servers:         map[int64]*server{},
		sshKeys:         map[int64]*SSHKey{},
		volumes:         map[int64]*Volume{},
		placementGroups: map[int64]*PlacementGroup{},
		networks:        map[int64]*Network{},
		firewalls:       map[int64]*Firewall{},
		floatingIPs:     map[int64]*FloatingIP{},
		actions:         map[int64]*action{},
		stuck:           map[string]bool{},
		remaining:       float64(opts.RateLimit),
		lastRefill:      opts.Now(),
		maxRequests:     10000,
		hostile:         newHostile(&opts),
	}
	s.seed()
	return s
}

// Token is the token the simulator accepts.
func (s *Sim) Token() string { return s.opts.Token }

func (s *Sim) id() int64 { s.nextID++; return s.nextID }

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
