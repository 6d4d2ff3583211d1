// Package mmapmem backs wazero linear memories with mmap'd address space
// instead of Go heap slices.
//
// wazero's default linear memory is a Go []byte that grows by append: each
// memory.grow past the capacity allocates a larger slice and copies, the old
// and the new copy both stay resident until the Go GC frees the old one, and
// freed heap pages go back to the OS only lazily. A Go guest grows its
// memory many times while it starts, so a ready instance costs several MiB
// more RSS than the bytes it uses.
//
// An Allocator instead reserves the memory's maximum once, as address space
// with no access (mmap PROT_NONE, MAP_NORESERVE), and makes pages readable
// and writable (mprotect) as the memory grows. Growth never copies and the
// base address never moves (so the memory also meets wazero's requirement
// for a shared memory). The pages it commits are faulted in at once, in
// host code, so that no first-touch page fault lands in a guest's compiled
// code, where the Go scheduler cannot preempt it (prefault.go): a committed
// page costs RSS from the commit, and reads zero until the guest writes it.
// Free unmaps the whole reservation at once, so the RSS comes back to the
// OS immediately. On Linux the reservation is also kept out of transparent
// huge pages (MADV_NOHUGEPAGE), so that a commit of one page never makes
// 2 MiB resident.
//
// An Image (Linux) is a memory's initial contents held once in a sealed
// memfd: WithImage's memories map it copy-on-write as their first pages,
// so the pages instances only read are shared between them (image.go).
//
// Only Linux and Darwin are supported. Elsewhere New returns nil and callers
// keep wazero's default:
//
//	ctx := context.Background()
//	if a := mmapmem.New(); a != nil {
//		ctx = experimental.WithMemoryAllocator(ctx, a)
//	}
//	mod, err := r.InstantiateModule(ctx, compiled, cfg)
//
// (Check for nil: an interface holding a nil *Allocator is not nil to
// wazero. Such an Allocator still works, with the fallback below.)
//
// Allocate fails soft: if the reservation cannot be made (an address space
// limit, a 32-bit platform, an unsupported OS), it returns a memory backed
// by a Go []byte that grows by append, which is what wazero does without an
// allocator.
//
// # Safety
//
// The []byte handed to wazero points outside the Go heap. The Go GC ignores
// it, which is correct: the mapping lives until Free, not until the last
// reference is dropped. That is also the one hazard: after Free (wazero
// calls it when the module is closed) any access to the memory — a guest
// still running on another goroutine, or host code that kept a slice
// returned by api.Memory.Read — faults, and a fault outside the Go heap
// kills the process instead of panicking. Close a module only when no call
// is running in it and no host code holds views of its memory; with the
// default allocator the same mistake reads stale memory instead.
package mmapmem

import (
	"github.com/tetratelabs/wazero/experimental"
)

// Allocator implements experimental.MemoryAllocator with mmap'd memory; see
// the package documentation. It has no state: one Allocator may serve any
// number of runtimes and modules concurrently.
type Allocator struct{}

var _ experimental.MemoryAllocator = (*Allocator)(nil)

// New returns an Allocator, or nil where mmap'd memories are not supported
// (any OS but Linux and Darwin); then leave wazero's default in place.
func New() *Allocator {
	if !supported {
		return nil
	}
	return &Allocator{}
}

// Allocate implements experimental.MemoryAllocator: a memory of at most max
// bytes, with the first cap bytes (wazero's initial size, unless the
// runtime asks for capacity up to the maximum) committed at once. It never
// fails: without mmap it returns a heap-backed memory. A nil *Allocator
// works too.
func (a *Allocator) Allocate(cap, max uint64) experimental.LinearMemory {
	if m, ok := allocateMapped(cap, max, nil); ok {
		return m
	}
	return newHeapMemory(cap, max)
}

// heapMemory is the fallback: a Go slice grown by append, as wazero's
// default memory is.
type heapMemory struct {
	buf []byte
	max uint64
}

// maxSliceLen bounds what a []byte can hold on this platform.
const maxSliceLen = uint64(^uint(0) >> 1)

func newHeapMemory(cap, max uint64) *heapMemory {
	// wazero passes cap <= max; clamp anyway, and never preallocate more
	// than a slice can hold (a 4 GiB cap on a 32-bit platform).
	cap = min(cap, max, maxSliceLen)
	return &heapMemory{buf: make([]byte, 0, cap), max: max}
}

// Reallocate implements experimental.LinearMemory.
func (m *heapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > m.max || size > maxSliceLen {
		return nil
	}
	n := uint64(len(m.buf))
	switch {
	case size <= n:
		m.buf = m.buf[:size]
	case size <= uint64(cap(m.buf)):
		// Bytes past len may hold data from before a shrink (wazero never
		// shrinks a memory, but the contract allows it): zero them.
		m.buf = m.buf[:size]
		clear(m.buf[n:])
	default:
		m.buf = append(m.buf, make([]byte, size-n)...)
	}
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *heapMemory) Free() { m.buf = nil }
