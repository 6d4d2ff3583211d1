package mmapmem

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// imageSeals make the memfd immutable: no write (also through a shared
// mapping), no size change, no change of the seals.
const imageSeals = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL

// NewImage returns an image of content (which it copies).
func NewImage(content []byte) (*Image, error) {
	fd, err := unix.MemfdCreate("wasmprov-memory-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memory image: memfd_create: %w", err)
	}
	im := &Image{fd: fd, size: uint64(len(content))}
	if err := im.fill(content); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("memory image: %w", err)
	}
	return im, nil
}

func (im *Image) fill(content []byte) error {
	if err := unix.Ftruncate(im.fd, int64(roundUp(im.size))); err != nil {
		return fmt.Errorf("ftruncate: %w", err)
	}
	// Pages of zeros stay holes: a module whose data is sparse costs the
	// pages its data is on, not the span.
	page := int(pageSize)
	for start := 0; start < len(content); {
		if isZero(content[start:min(start+page, len(content))]) {
			start += page
			continue
		}
		end := start + page
		for end < len(content) && !isZero(content[end:min(end+page, len(content))]) {
			end += page
		}
		if err := pwriteAll(im.fd, content[start:min(end, len(content))], int64(start)); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		start = end
	}
	if _, err := unix.FcntlInt(uintptr(im.fd), unix.F_ADD_SEALS, imageSeals); err != nil {
		return fmt.Errorf("sealing: %w", err)
	}
	return nil
}

func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// zeroPage is a page of zeros to compare with.
var zeroPage = make([]byte, pageSize)

func isZero(b []byte) bool { return bytes.Equal(b, zeroPage[:len(b)]) }

// Close releases the image's file. Memories that map it keep their pages.
func (im *Image) Close() error {
	if im.fd < 0 {
		return nil
	}
	err := unix.Close(im.fd)
	im.fd = -1
	return err
}

// mapImage maps im copy-on-write over the start of m, before m is shared:
// the mapping replaces the reservation's first pages (MAP_FIXED), so they
// are committed from then on.
func mapImage(m experimental.LinearMemory, im *Image) error {
	mm, ok := m.(*mappedMemory)
	if !ok || im.fd < 0 {
		return ErrUnsupported
	}
	n := roundUp(im.size)
	if n == 0 {
		return nil
	}
	if n > uint64(len(mm.region)) {
		return fmt.Errorf("memory image of %d bytes does not fit a memory of at most %d", im.size, mm.max)
	}
	_, err := unix.MmapPtr(im.fd, 0, unsafe.Pointer(unsafe.SliceData(mm.region)), uintptr(n),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return err
	}
	adviseNoHugePages(mm.region[:n])
	mm.committed = max(mm.committed, n)
	return nil
}

// readImage copies im's bytes into b (len(b) == im.size).
func readImage(im *Image, b []byte) error {
	if im.fd < 0 {
		return ErrUnsupported
	}
	for off := 0; off < len(b); {
		n, err := unix.Pread(im.fd, b[off:], int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("memory image: short read at %d of %d", off, len(b))
		}
		off += n
	}
	return nil
}
