// Package createcap caps how many Creates run at once, per provider and
// per owner (a MachineSet, whatever its MachineDeployment): a scale-up of
// a thousand machines does not fire a thousand Creates at a cloud that
// throttles, and one MachineSet's burst does not take every slot another
// needs. A reconcile that finds no slot is looked at again later; the
// cap never blocks a worker.
package createcap

import "sync"

// Caps is the set of caps; the zero value caps nothing. Safe for
// concurrent use.
type Caps struct {
	// PerProvider and PerOwner are the caps (0: none).
	PerProvider, PerOwner int

	mu         sync.Mutex
	byProvider map[string]int
	byOwner    map[string]int
}

// New returns Caps of perProvider Creates per provider and perOwner per
// owner (0: uncapped).
func New(perProvider, perOwner int) *Caps {
	return &Caps{PerProvider: perProvider, PerOwner: perOwner}
}

// TryAcquire takes a slot for a Create by provider for owner ("": none)
// and returns its release, or false when either cap is reached.
func (c *Caps) TryAcquire(provider, owner string) (release func(), ok bool) {
	if c == nil || (c.PerProvider <= 0 && c.PerOwner <= 0) {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byProvider == nil {
		c.byProvider, c.byOwner = map[string]int{}, map[string]int{}
	}
	if c.PerProvider > 0 && c.byProvider[provider] >= c.PerProvider {
		return nil, false
	}
	if owner != "" && c.PerOwner > 0 && c.byOwner[owner] >= c.PerOwner {
		return nil, false
	}
	c.byProvider[provider]++
	if owner != "" {
		c.byOwner[owner]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.byProvider[provider]--; c.byProvider[provider] <= 0 {
				delete(c.byProvider, provider)
			}
			if owner != "" {
				if c.byOwner[owner]--; c.byOwner[owner] <= 0 {
					delete(c.byOwner, owner)
				}
			}
		})
	}, true
}

// InFlight returns the Creates running for provider.
func (c *Caps) InFlight(provider string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byProvider[provider]
}
