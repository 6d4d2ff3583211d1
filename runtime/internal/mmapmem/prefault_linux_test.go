package mmapmem

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident is how many of b's pages are in memory (mincore).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (uint64(len(b))+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))),
		uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestCommittedPagesAreFaultedIn: the pages an allocation or a growth
// commits are resident before the guest touches them (prefault), so no
// first-touch page fault lands in a guest's compiled code, where a host
// collection would wait for it; the reservation past them is not.
func TestCommittedPagesAreFaultedIn(t *testing.T) {
	m := mapped(t, 4*wasmPage, 64*wasmPage)
	pagesOf := func(n uint64) int { return int(n / pageSize) }
	if got, want := resident(t, m.region[:4*wasmPage]), pagesOf(4*wasmPage); got != want {
		t.Fatalf("after Allocate: %d of the %d committed pages resident, want all", got, want)
	}
	b := m.Reallocate(20 * wasmPage)
	if got, want := resident(t, b[4*wasmPage:]), pagesOf(16*wasmPage); got != want {
		t.Fatalf("after growing: %d of the %d new pages resident, want all", got, want)
	}
	if got := resident(t, m.region[20*wasmPage:]); got != 0 {
		t.Fatalf("%d pages past the committed size resident, want none", got)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d of a fresh memory = %#x, want 0", i, v)
		}
	}
}

// TestPagesAfterAnImageAreFaultedIn: with an image, the pages committed
// after it are resident too. (The image's own pages must not be faulted in
// as private copies, which would undo the sharing: TestImagePagesAreShared.)
func TestPagesAfterAnImageAreFaultedIn(t *testing.T) {
	im := newImage(t, imageContent(3*wasmPage))
	lm := New().WithImage(im).Allocate(8*wasmPage, 16*wasmPage)
	t.Cleanup(lm.Free)
	m, ok := lm.(*mappedMemory)
	if !ok {
		t.Fatalf("Allocate = %T, want *mappedMemory", lm)
	}
	if got, want := resident(t, m.region[3*wasmPage:8*wasmPage]), int(5*wasmPage/pageSize); got != want {
		t.Fatalf("%d of the %d pages after the image resident, want all", got, want)
	}
}
