package createcap

import (
	"sync"
	"testing"
)

// A provider's cap and an owner's cap each stop the next Create; a
// release frees the slot (once, however often it is called).
func TestCaps(t *testing.T) {
	c := New(3, 2)
	var releases []func()
	for i, owner := range []string{"ms-a", "ms-a", "ms-b"} {
		r, ok := c.TryAcquire("hetzner", owner)
		if !ok {
			t.Fatalf("Create %d refused under the caps", i)
		}
		releases = append(releases, r)
	}
	if _, ok := c.TryAcquire("hetzner", "ms-c"); ok {
		t.Fatal("a 4th Create of the provider got a slot (cap 3)")
	}
	if _, ok := c.TryAcquire("other", "ms-a"); ok {
		t.Fatal("a 3rd Create of ms-a got a slot (cap 2 per owner)")
	}
	if r, ok := c.TryAcquire("other", "ms-c"); !ok {
		t.Fatal("another provider and owner were refused")
	} else {
		r()
	}
	releases[0]()
	releases[0]() // twice: still one slot
	if n := c.InFlight("hetzner"); n != 2 {
		t.Fatalf("%d in flight after one release", n)
	}
	if _, ok := c.TryAcquire("hetzner", "ms-a"); !ok {
		t.Fatal("the released slot was not free")
	}
}

// Uncapped (zero value, nil) never refuses.
func TestUncapped(t *testing.T) {
	var nilCaps *Caps
	for _, c := range []*Caps{nilCaps, {}, New(0, 0)} {
		for range 100 {
			if _, ok := c.TryAcquire("p", "o"); !ok {
				t.Fatal("refused without caps")
			}
		}
	}
}

// Under contention the cap holds.
func TestCapsConcurrent(t *testing.T) {
	c := New(4, 0)
	var mu sync.Mutex
	most, cur := 0, 0
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 100 {
				r, ok := c.TryAcquire("p", "")
				if !ok {
					continue
				}
				mu.Lock()
				cur++
				most = max(most, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				r()
			}
		})
	}
	wg.Wait()
	if most > 4 {
		t.Fatalf("%d Creates at once under a cap of 4", most)
	}
}
