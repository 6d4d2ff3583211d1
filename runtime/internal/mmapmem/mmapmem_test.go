package mmapmem

import (
	"testing"
	"unsafe"
)

const wasmPage = 64 << 10

func pattern[T int | uint64](i T) byte { return byte(i*7 + 1) }

func base(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// An mmap that fails (here: more address space than the OS has) falls
// back to a heap memory instead of failing the instantiation.
func TestFallsBackWhenMmapFails(t *testing.T) {
	for _, max := range []uint64{0, 1 << 62, 1<<64 - 1} {
		lm := New().Allocate(wasmPage, max)
		if _, ok := lm.(*heapMemory); !ok {
			t.Fatalf("Allocate(_, %d) = %T, want the *heapMemory fallback", max, lm)
		}
		if max > 0 {
			b := lm.Reallocate(2 * wasmPage)
			if len(b) != 2*wasmPage {
				t.Fatalf("fallback Reallocate: len %d", len(b))
			}
		}
		lm.Free()
	}
}

func TestNilAllocator(t *testing.T) {
	var a *Allocator
	lm := a.Allocate(wasmPage, 4*wasmPage)
	if b := lm.Reallocate(4 * wasmPage); len(b) != 4*wasmPage {
		t.Fatalf("len %d", len(b))
	}
	lm.Free()
}

func TestHeapMemory(t *testing.T) {
	m := newHeapMemory(wasmPage, 8*wasmPage)
	if b := m.Reallocate(0); b == nil {
		t.Fatal("Reallocate(0) = nil")
	}
	b := m.Reallocate(wasmPage)
	b[0], b[wasmPage-1] = 1, 2
	b = m.Reallocate(3 * wasmPage)
	if len(b) != 3*wasmPage || b[0] != 1 || b[wasmPage-1] != 2 || b[wasmPage] != 0 || b[3*wasmPage-1] != 0 {
		t.Fatal("growth lost contents or is not zero")
	}
	b[2*wasmPage] = 9
	m.Reallocate(wasmPage)
	if b := m.Reallocate(3 * wasmPage); b[2*wasmPage] != 0 {
		t.Fatal("regrowth after a shrink is not zero")
	}
	if m.Reallocate(8*wasmPage+1) != nil {
		t.Fatal("Reallocate beyond max returned memory")
	}
	m.Free()
	m.Free()
	if m.Reallocate(wasmPage) != nil {
		t.Fatal("Reallocate after Free returned memory")
	}
	if New() == nil && supported {
		t.Fatal("New() = nil on a supported OS")
	}
}
