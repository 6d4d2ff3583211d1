// Claims: which of the WasmProviders naming one cloud provider serves it,
// and handing it over when that one lets go.

package wasmprovider

import (
	"errors"
	"regexp"
	"sort"
	"sync"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// cloudProviderName is what spec.cloudProvider may be.
var cloudProviderName = regexp.MustCompile(`^[a-z0-9._-]{1,63}$`)

// lockCP locks the cloud provider names given (sorted, so that two
// reconciles never wait on each other crosswise) and returns the unlock.
func (r *Reconciler) lockCP(names ...string) func() {
	sort.Strings(names)
	var locked []*sync.Mutex
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		r.mu.Lock()
		m := r.cpLocks[n]
		if m == nil {
			m = &sync.Mutex{}
			r.cpLocks[n] = m
		}
		r.mu.Unlock()
		m.Lock()
		locked = append(locked, m)
	}
	return func() {
		for i := len(locked) - 1; i >= 0; i-- {
			locked[i].Unlock()
		}
	}
}

// claimants are the live WasmProviders naming cp, oldest first (creation
// time, then name): the first one serves it.
func (r *Reconciler) claimants(cp string) []*wasmprovv1alpha1.WasmProvider {
	objs, err := r.informer.GetIndexer().ByIndex(cloudProviderIndex, cp)
	if err != nil {
		return nil
	}
	var out []*wasmprovv1alpha1.WasmProvider
	for _, o := range objs {
		if wp, ok := o.(*wasmprovv1alpha1.WasmProvider); ok && wp.DeletionTimestamp == nil {
			out = append(out, wp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return out
}

// claim arbitrates cp between its claimants with cp locked: the
// WasmProvider name wins it if it is the oldest claimant, and the others
// are queued when it takes cp over; otherwise it gives cp up, queues the
// winner and returns its name ("" if there is no claimant at all).
func (r *Reconciler) claim(name, cp string, st *state) (winner string, won bool) {
	cl := r.claimants(cp)
	if len(cl) == 0 || cl[0].Name != name {
		if len(cl) > 0 {
			winner = cl[0].Name
		}
		r.mu.Lock()
		if r.owners[cp] == name {
			// An older claimant appeared: it takes the name over by
			// loading its own version.
			delete(r.owners, cp)
		}
		st.cp = ""
		r.mu.Unlock()
		if winner != "" {
			r.enqueue(winner)
		}
		return winner, false
	}
	r.mu.Lock()
	took := r.owners[cp] != name
	r.owners[cp] = name
	st.cp = cp
	r.mu.Unlock()
	if took {
		for _, c := range cl[1:] {
			r.enqueue(c.Name)
		}
	}
	return "", true
}

// release gives up the cloud provider name the WasmProvider name won: its
// next claimant takes it over, or it is unregistered. deleted also forgets
// the WasmProvider and unpins its revisions.
func (r *Reconciler) release(name string, deleted bool) {
	r.mu.Lock()
	st := r.states[name]
	cp := ""
	if st != nil {
		cp = st.cp
	}
	r.mu.Unlock()
	if cp != "" {
		unlock := r.lockCP(cp)
		r.mu.Lock()
		owner := r.owners[cp] == name
		if owner {
			delete(r.owners, cp)
		}
		st.cp = ""
		r.mu.Unlock()
		if owner {
			next := ""
			for _, c := range r.claimants(cp) {
				if c.Name != name {
					next = c.Name
					break
				}
			}
			if next != "" {
				r.log.Info("wasmprovider: cloud provider handed over", "cloudProvider", cp, "from", name, "to", next)
				r.enqueue(next)
			} else if err := r.opts.Loader.Unregister(cp); err != nil && !errors.Is(err, registry.ErrProviderNotFound) {
				r.log.Error("wasmprovider: unregistering", "cloudProvider", cp, "wasmprovider", name, "err", err)
			} else {
				r.log.Info("wasmprovider: cloud provider unregistered", "cloudProvider", cp, "wasmprovider", name)
			}
		}
		unlock()
	}
	if !deleted {
		return
	}
	if st != nil && len(st.pinned) > 0 && r.opts.Store != nil {
		r.opts.Store.Pin(pinOwner(name))
	}
	r.mu.Lock()
	delete(r.states, name)
	r.mu.Unlock()
}
