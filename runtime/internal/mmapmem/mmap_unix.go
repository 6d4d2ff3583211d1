//go:build linux || darwin

package mmapmem

import (
	"os"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

const supported = true

var pageSize = uint64(os.Getpagesize())

// roundUp rounds n up to a multiple of the OS page size.
func roundUp(n uint64) uint64 { return (n + pageSize - 1) &^ (pageSize - 1) }

// mappedMemory is a linear memory in a reservation of its maximum size:
// [0, committed) is readable and writable, the rest has no access.
type mappedMemory struct {
	mu        sync.Mutex // Reallocate (the guest's goroutine) against Free (Close)
	region    []byte     // the whole reservation as unix.Mmap returned it; nil once freed
	committed uint64     // a multiple of the page size
	max       uint64
}

// allocateMapped reserves max bytes, maps im (when not nil) over the first
// pages, and commits the first cap. It reports false when the reservation,
// the image's mapping or the commit fails, or when max is 0 (mmap cannot
// map nothing).
func allocateMapped(cap, max uint64, im *Image) (experimental.LinearMemory, bool) {
	reserve := roundUp(max)
	if max == 0 || reserve < max || reserve > maxSliceLen {
		return nil, false
	}
	region, err := unix.Mmap(-1, 0, int(reserve), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, false
	}
	adviseNoHugePages(region)
	m := &mappedMemory{region: region, max: max}
	if im != nil && mapImage(m, im) != nil {
		_ = unix.Munmap(region) // a failed MAP_FIXED may have unmapped part of it
		return nil, false
	}
	if err := m.commit(min(cap, max)); err != nil {
		_ = unix.Munmap(region)
		return nil, false
	}
	return m, true
}

// commit makes [0, size) readable and writable and faults its new pages in
// (prefault); m.mu is held or m is not yet shared. Fresh pages of an
// anonymous mapping read zero, and pages are never decommitted, so a
// committed byte is zero until the guest writes it.
func (m *mappedMemory) commit(size uint64) error {
	if size <= m.committed {
		return nil
	}
	end := roundUp(size) // <= len(m.region): size <= max
	if err := unix.Mprotect(m.region[m.committed:end], unix.PROT_READ|unix.PROT_WRITE); err != nil {
		return err
	}
	prefault(m.region[m.committed:end])
	m.committed = end
	return nil
}

// Reallocate implements experimental.LinearMemory: the first size bytes of
// the reservation, always at the same address, or nil beyond the maximum,
// after Free, or when the OS refuses to commit the pages. The slice's
// capacity is its length, so no Go code can reslice into pages with no
// access. A smaller size returns a prefix and keeps the rest committed,
// contents included (wazero never shrinks a memory).
func (m *mappedMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.region == nil || size > m.max {
		return nil
	}
	if err := m.commit(size); err != nil {
		return nil
	}
	return m.region[:size:size]
}

// Free implements experimental.LinearMemory: it unmaps the reservation.
// Calling it again does nothing. See the package documentation for why
// nothing may touch the memory afterwards.
func (m *mappedMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.region == nil {
		return
	}
	_ = unix.Munmap(m.region) // fails only for a bad range; nothing to do then
	m.region, m.committed = nil, 0
}
