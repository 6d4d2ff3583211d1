package registry

import (
	"context"
	"time"

	"github.com/wasmprov/wasmprov/runtime"
)

// retire waits in the background for old's calls to finish, then closes it.
func (r *Registry) retire(e *entry, old *runtime.Provider) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		timeout := r.cfg.drainTimeout
		if timeout <= 0 {
			timeout = time.Duration(old.Policy().CallTimeout) + 10*time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		err := old.Close(ctx)
		ps := old.PoolStats()
		st := &e.st
		st.mu.Lock()
		delete(st.draining, old)
		st.retiredCreate += ps.Created
		st.retiredDisc += ps.Discarded
		st.mu.Unlock()
		ev := Event{Kind: EventDrained, Provider: e.name, SHA256: old.SHA256(), Err: err, Duration: time.Since(start)}
		if err != nil {
			r.cfg.logger.Warn("old provider version closed before its calls finished", "provider", e.name,
				"sha256", old.SHA256(), "error", err)
		} else {
			r.cfg.logger.Debug("old provider version drained and closed", "provider", e.name,
				"sha256", old.SHA256(), "took", ev.Duration)
		}
		r.emit(ev)
	}()
}

// unload removes e's serving version; e.loadMu is held.
func (r *Registry) unload(e *entry, why string) {
	e.key, e.rejectedKey, e.rejectedErr = contentKey{}, contentKey{}, nil
	e.img.serving = ""
	r.pinImages(e, nil)
	st := &e.st
	st.mu.Lock()
	st.removed, st.stale, st.lastErr, st.lastErrAt = true, nil, "", time.Time{}
	old := e.cur.Swap(nil)
	if old == nil {
		st.mu.Unlock()
		return
	}
	if st.draining == nil {
		st.draining = map[*runtime.Provider]struct{}{}
	}
	st.draining[old] = struct{}{}
	st.mu.Unlock()
	r.mu.Lock()
	src := e.src
	r.mu.Unlock()
	r.cfg.logger.Info("provider unloaded; calls in flight finish", "provider", e.name, "reason", why, "sha256", old.SHA256())
	r.emit(Event{Kind: EventUnloaded, Provider: e.name, Source: sourceOf(e, e.name, src), SHA256: old.SHA256()})
	r.retire(e, old)
}
