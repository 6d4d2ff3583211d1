package mmapmem

import (
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// An Image is the initial contents of linear memories, kept once, out of
// the Go heap, for every memory allocated with it (package memimage makes
// one from a module's data segments). A memory maps it copy-on-write as its
// first pages: reading them costs no memory of its own, and the first write
// to a page copies that page into the memory alone. No memory ever sees
// another's writes, and the image itself cannot change: on Linux it is a
// sealed memfd (no write, grow or shrink, by anyone), mapped MAP_PRIVATE.
//
// Where images are not supported (any OS but Linux) NewImage fails and the
// caller keeps the module's data segments.
type Image struct {
	fd   int    // the memfd; -1 once closed
	size uint64 // content bytes; the file is roundUp(size) long, zero-filled
}

// ErrUnsupported is NewImage where there are no images.
var ErrUnsupported = errors.New("mmapmem: memory images are not supported on this platform")

// WithImage returns an allocator like a whose memories start with im's
// bytes (a memory whose maximum cannot hold them fails to instantiate). im
// must stay open while memories are allocated with it; those allocated
// keep their pages after im.Close.
func (a *Allocator) WithImage(im *Image) experimental.MemoryAllocator {
	return imageAllocator{im: im}
}

type imageAllocator struct{ im *Image }

// Allocate is Allocator.Allocate, then the image in place: mapped
// copy-on-write where it can be, read into the memory where it cannot (the
// heap fallback, or a failed mapping). It never fails, as wazero expects of
// an allocator: a memory whose content cannot be put in place returns nil
// from Reallocate, which fails the instantiation.
func (a imageAllocator) Allocate(capBytes, maxBytes uint64) experimental.LinearMemory {
	if m, ok := allocateMapped(capBytes, maxBytes, a.im); ok {
		return m
	}
	return newHeapImageMemory(capBytes, maxBytes, a.im)
}

// newHeapImageMemory is a heap memory holding im's bytes, or one that
// refuses every size when they cannot be read or do not fit.
func newHeapImageMemory(capBytes, maxBytes uint64, im *Image) *heapMemory {
	m := newHeapMemory(max(capBytes, im.size), maxBytes)
	if im.size > m.max || im.size > maxSliceLen {
		return &heapMemory{}
	}
	m.buf = m.buf[:im.size]
	if readImage(im, m.buf) != nil {
		return &heapMemory{}
	}
	return m
}
