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
	InstancesCreated   int64     `json:"instancesCreated"`
	InstancesDiscarded int64     `json:"instancesDiscarded"`
	Draining           int       `json:"draining"`
	ReloadsOK          int64     `json:"reloadsOK"`
	ReloadsFailed      int64     `json:"reloadsFailed"`
	LastError          string    `json:"lastError,omitempty"`
	LastErrorAt        time.Time `json:"lastErrorAt,omitzero"`
}

// Status reports every provider name the registry knows, sorted by name,
// including names whose last version was removed or never loaded.
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
			s.Image, s.ImageDigest = st.image, st.imageDigest
		}
		s.Draining = len(st.draining)
		s.ReloadsOK, s.ReloadsFailed = st.reloadsOK, st.reloadsFailed
		s.LastError, s.LastErrorAt = st.lastErr, st.lastErrAt
		st.mu.Unlock()
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}
