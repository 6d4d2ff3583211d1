package registry

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
)

// entryStats is what Status reports of an entry beyond its serving
// version: the versions still draining and counters over every version.
type entryStats struct {
	mu            sync.Mutex
	draining      map[*runtime.Provider]struct{}
	retiredCreate int64
	retiredDisc   int64
	reloadsOK     int64
	reloadsFailed int64
	loadedAt      time.Time
	image         string // the serving version's image entry reference, if any
	imageDigest   string // and the manifest digest it resolved to
	lastErr       string
	lastErrAt     time.Time
	// removed: the source no longer names the provider (its file went,
	// Unregister); Status forgets it once nothing drains.
	removed bool
	// stale: the version serving is the last known good, not what the
	// image names now (the registry could not be reached).
	stale *staleInfo
	// Image pulls (resolutions and fetches) and verifications, with the
	// time they took.
	pullsOK, pullsFailed, verifiesOK, verifiesFailed int64
	pullTime, verifyTime                             time.Duration
}

// settled records a version serving, or confirmed, from the source as it
// is: no failure stands any more, the name is configured, and the
// version is stale only if it is the last known good (stale non-nil).
// st.mu is held.
func (st *entryStats) settled(stale *staleInfo) {
	st.lastErr, st.lastErrAt, st.removed, st.stale = "", time.Time{}, false, stale
}

func (st *entryStats) countPull(err error, d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pullTime += d
	if err != nil {
		st.pullsFailed++
	} else {
		st.pullsOK++
	}
}

func (st *entryStats) countVerify(err error, d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.verifyTime += d
	if err != nil {
		st.verifiesFailed++
	} else {
		st.verifiesOK++
	}
}

// Status describes one provider name for metrics, health and diagnostics.
// Counters add up over every version the name has had.
type Status struct {
	Name     string    `json:"name"`
	Source   string    `json:"source"`
	Serving  bool      `json:"serving"`
	SHA256   string    `json:"sha256,omitempty"`
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// Image and ImageDigest are, for a provider served from an image
	// entry, its reference as written and the manifest digest serving.
	Image       string `json:"image,omitempty"`
	ImageDigest string `json:"imageDigest,omitempty"`
	// PoolSize is the serving version's instance cap.
	PoolSize int `json:"poolSize,omitempty"`
	// Instances and InUse count live instances of every version still
	// open (the serving one and any draining).
	Instances int64 `json:"instances"`
	InUse     int64 `json:"inUse"`
	// InstancesCreated and InstancesDiscarded are cumulative.
	InstancesCreated   int64 `json:"instancesCreated"`
	InstancesDiscarded int64 `json:"instancesDiscarded"`
	Draining           int   `json:"draining"`
	ReloadsOK          int64 `json:"reloadsOK"`
	ReloadsFailed      int64 `json:"reloadsFailed"`
	// LastError is why the last attempt to load a version failed, until
	// one succeeds.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
	// Stale is set while the version serving is the last known good
	// rather than what the image names now: the registry could not be
	// reached (StaleReason) and the tag was last resolved at StaleSince.
	// It clears when the image is resolved again.
	Stale       bool      `json:"stale,omitempty"`
	StaleReason string    `json:"staleReason,omitempty"`
	StaleSince  time.Time `json:"staleSince,omitzero"`
	// Image pulls (tag resolutions and artifact fetches, from the store
	// or the registry) and signature verifications, by result, and the
	// time they took in all.
	PullsOK             int64   `json:"pullsOK,omitempty"`
	PullsFailed         int64   `json:"pullsFailed,omitempty"`
	PullSeconds         float64 `json:"pullSeconds,omitempty"`
	VerificationsOK     int64   `json:"verificationsOK,omitempty"`
	VerificationsFailed int64   `json:"verificationsFailed,omitempty"`
	VerifySeconds       float64 `json:"verifySeconds,omitempty"`
	// HTTP is the pacing of the provider's outbound HTTP, over every
	// version (the serving version's limiter is the name's).
	HTTP runtime.HTTPPacing `json:"http,omitzero"`
}

// Status reports every provider name the registry is configured with,
// sorted by name, including names that failed to load (Serving false,
// LastError why) and names removed whose last version still drains; a
// name removed and drained is forgotten.
func (r *Registry) Status() []Status {
	r.mu.Lock()
	entries := make([]*entry, 0, len(r.entries))
	srcs := make([]source, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
		srcs = append(srcs, e.src)
	}
	r.mu.Unlock()
	out := make([]Status, 0, len(entries))
	for i, e := range entries {
		s := Status{Name: e.name, Source: sourceOf(e, e.name, srcs[i])}
		st := &e.st
		st.mu.Lock()
		cur := e.cur.Load()
		s.InstancesCreated, s.InstancesDiscarded = st.retiredCreate, st.retiredDisc
		add := func(p *runtime.Provider) {
			ps := p.PoolStats()
			s.InstancesCreated += ps.Created
			s.InstancesDiscarded += ps.Discarded
			s.Instances += ps.Live
			s.InUse += ps.InUse
		}
		for p := range st.draining {
			add(p)
		}
		if cur != nil {
			add(cur)
			s.Serving, s.SHA256, s.PoolSize, s.LoadedAt = true, cur.SHA256(), cur.Policy().PoolSize, st.loadedAt
			s.HTTP = cur.HTTPPacing()
			s.Image, s.ImageDigest = st.image, st.imageDigest
		}
		s.Draining = len(st.draining)
		s.ReloadsOK, s.ReloadsFailed = st.reloadsOK, st.reloadsFailed
		s.LastError, s.LastErrorAt = st.lastErr, st.lastErrAt
		if st.stale != nil && cur != nil {
			s.Stale, s.StaleReason, s.StaleSince = true, st.stale.reason, st.stale.since
		}
		s.PullsOK, s.PullsFailed, s.PullSeconds = st.pullsOK, st.pullsFailed, st.pullTime.Seconds()
		s.VerificationsOK, s.VerificationsFailed, s.VerifySeconds = st.verifiesOK, st.verifiesFailed, st.verifyTime.Seconds()
		forgotten := st.removed && cur == nil && len(st.draining) == 0
		st.mu.Unlock()
		if forgotten {
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}
