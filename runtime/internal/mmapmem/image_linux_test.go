package mmapmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func newImage(t *testing.T, content []byte) *Image {
	t.Helper()
	im, err := NewImage(content)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = im.Close() })
	return im
}

func imageContent(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(i)
	}
	return b
}

// Every memory starts with the image's bytes and zeros after them; a write
// stays in the memory that made it: the others, and memories allocated
// afterwards, still read the image.
func TestImageMemoriesAreCopyOnWrite(t *testing.T) {
	content := imageContent(3*wasmPage + 100)
	im := newImage(t, content)
	a := New().WithImage(im)
	const size, max = 4 * wasmPage, 16 * wasmPage
	alloc := func() []byte {
		lm := a.Allocate(size, max)
		if _, ok := lm.(*mappedMemory); !ok {
			t.Fatalf("Allocate = %T, want a mapped memory", lm)
		}
		t.Cleanup(lm.Free)
		b := lm.Reallocate(size)
		if len(b) != size {
			t.Fatalf("Reallocate: %d bytes", len(b))
		}
		return b
	}
	m1, m2 := alloc(), alloc()
	for _, m := range [][]byte{m1, m2} {
		if !bytes.Equal(m[:len(content)], content) || !bytes.Equal(m[len(content):], make([]byte, size-len(content))) {
			t.Fatal("a memory does not start with the image, then zeros")
		}
	}
	m1[0], m1[wasmPage+1], m1[len(content)+1] = 0xee, 0xee, 0xee
	if m2[0] != content[0] || m2[wasmPage+1] != content[wasmPage+1] || m2[len(content)+1] != 0 {
		t.Fatal("a write to one memory shows in another")
	}
	if m3 := alloc(); !bytes.Equal(m3[:len(content)], content) {
		t.Fatal("a write to a memory changed the image")
	}
	if m1[0] != 0xee || m1[wasmPage+1] != 0xee {
		t.Fatal("a memory lost its own write")
	}
}

// Growth keeps the image's bytes and the memory's writes where they are.
func TestImageMemoryGrows(t *testing.T) {
	content := imageContent(wasmPage)
	lm := New().WithImage(newImage(t, content)).Allocate(wasmPage, 8*wasmPage)
	defer lm.Free()
	b := lm.Reallocate(wasmPage)
	b[10] = 0xaa
	b = lm.Reallocate(8 * wasmPage)
	if len(b) != 8*wasmPage || b[10] != 0xaa || !bytes.Equal(b[11:wasmPage], content[11:]) || b[7*wasmPage] != 0 {
		t.Fatal("growth lost contents")
	}
}

// Nobody can change an image: the memfd is sealed against writes and size
// changes, and against removing the seals.
func TestImageIsSealed(t *testing.T) {
	im := newImage(t, imageContent(wasmPage))
	if _, err := unix.Pwrite(im.fd, []byte{1}, 0); err != unix.EPERM {
		t.Fatalf("write to the image: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(im.fd, 0); err != unix.EPERM {
		t.Fatalf("shrinking the image: %v, want EPERM", err)
	}
	if _, err := unix.Mmap(im.fd, 0, wasmPage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != unix.EPERM {
		t.Fatalf("a shared writable mapping of the image: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(im.fd), unix.F_ADD_SEALS, 0); err != unix.EPERM {
		t.Fatalf("changing the seals: %v, want EPERM", err)
	}
	flags, err := unix.FcntlInt(uintptr(im.fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("the image's file would pass to child processes (flags %#x, %v)", flags, err)
	}
}

// An image's pages of zeros are not stored: the memfd holds the pages
// with data, not the span.
func TestImageStoresOnlyPagesWithData(t *testing.T) {
	content := make([]byte, 64*pageSize+10)
	content[5] = 1
	content[20*pageSize+7] = 2
	content[len(content)-1] = 3
	im := newImage(t, content)
	var st unix.Stat_t
	if err := unix.Fstat(im.fd, &st); err != nil {
		t.Fatal(err)
	}
	if stored := uint64(st.Blocks) * 512; stored > 3*pageSize {
		t.Fatalf("the image stores %d bytes for 3 pages of data", stored)
	}
	lm := New().WithImage(im).Allocate(5*wasmPage, 5*wasmPage)
	defer lm.Free()
	if b := lm.Reallocate(5 * wasmPage); !bytes.Equal(b[:len(content)], content) {
		t.Fatal("a memory does not read the sparse image back")
	}
}

// Where the memory cannot be mapped, the image is read into a heap memory;
// where the bytes cannot be had at all (a closed image, an image larger
// than the memory may grow), the memory refuses every size, which fails
// the instantiation instead of starting a guest without its data.
func TestImageFallbacks(t *testing.T) {
	content := imageContent(wasmPage + 5)
	im := newImage(t, content)
	a := New().WithImage(im)
	lm := a.Allocate(2*wasmPage, 1<<62) // more address space than the OS has
	if _, ok := lm.(*heapMemory); !ok {
		t.Fatalf("Allocate = %T, want the heap fallback", lm)
	}
	if b := lm.Reallocate(2 * wasmPage); len(b) != 2*wasmPage || !bytes.Equal(b[:len(content)], content) || b[len(content)] != 0 {
		t.Fatal("the heap fallback does not hold the image")
	}
	if lm := a.Allocate(wasmPage, wasmPage); lm.Reallocate(wasmPage) != nil {
		t.Fatal("a memory whose maximum cannot hold the image was given one")
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	if lm := a.Allocate(2*wasmPage, 4*wasmPage); lm.Reallocate(2*wasmPage) != nil {
		t.Fatal("a closed image gave a memory")
	}
}

// Memories that only read the image share its pages: the process's
// proportional set size grows by about one image for eight memories that
// read all of it, and by another image for one memory that writes all of it.
func TestImagePagesAreShared(t *testing.T) {
	const size, n = 16 << 20, 8
	content := imageContent(size)
	im := newImage(t, content)
	content = nil
	a := New().WithImage(im)
	before := pssKiB(t)
	var mems [][]byte
	var sum byte
	for range n {
		lm := a.Allocate(size, size)
		t.Cleanup(lm.Free)
		b := lm.Reallocate(size)
		for i := 0; i < len(b); i += int(pageSize) {
			sum += b[i]
		}
		mems = append(mems, b)
	}
	read := pssKiB(t) - before
	for i := 0; i < size; i += int(pageSize) {
		mems[0][i]++
	}
	written := pssKiB(t) - before - read
	t.Logf("%d memories reading a %d MiB image: +%d KiB PSS; one writing all of it: +%d KiB (checksum %d)", n, size>>20, read, written, sum)
	if read > 2*size>>10 {
		t.Fatalf("reading grew PSS by %d KiB, more than twice the image (%d KiB): pages are not shared", read, size>>10)
	}
	if written < size>>11 {
		t.Fatalf("writing the whole image grew PSS by %d KiB only: the write did not copy", written)
	}
}

func pssKiB(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "Pss:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no Pss line in smaps_rollup")
	return 0
}
