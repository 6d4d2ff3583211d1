package wasip1

import (
	"io"
)

// writeStrings is args_get and environ_get: the offsets of the values at
// offsets, the NUL-terminated values at buf (size bytes). Both ranges are
// checked before anything is written; then each offset and its value are
// written in turn, into memory as it is (the ranges may overlap).
func writeStrings(mem Memory, values [][]byte, offsets, buf, size uint32) Errno {
	offsetsBuf, ok := mem.Read(offsets, uint32(len(values)*4))
	if !ok {
		return EFAULT
	}
	bytesBuf, ok := mem.Read(buf, size)
	if !ok {
		return EFAULT
	}
	var o, b uint32
	for _, v := range values {
		le.PutUint32(offsetsBuf[o:], buf+b)
		o += 4
		copy(bytesBuf[b:], v)
		b += uint32(len(v))
		bytesBuf[b] = 0
		b++
	}
	return ESUCCESS
}

// writeSizes is args_sizes_get and environ_sizes_get: the count, then the
// size, each on its own (the second may fault after the first was
// written).
func writeSizes(mem Memory, count, size, countPtr, sizePtr uint32) Errno {
	if !putU32(mem, countPtr, count) {
		return EFAULT
	}
	if !putU32(mem, sizePtr, size) {
		return EFAULT
	}
	return ESUCCESS
}

func (s *State) clockResGet(mem Memory, id, out uint32) Errno {
	var res uint64
	switch id {
	case clockRealtime:
		res = walltimeResolution
	case clockMonotonic:
		res = nanotimeResolution
	default:
		return EINVAL // as wazero: no CPU-time clocks
	}
	if !putU64(mem, out, res) {
		return EFAULT
	}
	return ESUCCESS
}

// clockTimeGet reads the clock before checking the result pointer, so a
// faulting call still advances a fake clock, as in wazero.
func (s *State) clockTimeGet(mem Memory, id, out uint32) Errno {
	var t int64
	switch id {
	case clockRealtime:
		t = s.walltime()
	case clockMonotonic:
		t = s.nanotime()
	default:
		return EINVAL
	}
	if !putU64(mem, out, uint64(t)) {
		return EFAULT
	}
	return ESUCCESS
}

func (s *State) fdAdvise(fd int32, advice byte) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	if advice > 5 { // normal, sequential, random, willneed, dontneed, noreuse
		return EINVAL
	}
	return ESUCCESS
}

// fdAllocate: a stdio file has size 0 and cannot be truncated.
func (s *State) fdAllocate(fd int32, offset, length uint64) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	tail := int64(offset + length)
	switch {
	case tail < 0:
		return EINVAL
	case tail == 0:
		return ESUCCESS // already large enough
	}
	return ENOSYS
}

func (s *State) fdClose(fd int32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	s.open[fd] = false
	return ESUCCESS
}

// fdSync is fd_sync and fd_datasync: nothing to flush.
func (s *State) fdSync(fd int32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	return ESUCCESS
}

// fdUnsupported is a function a stdio file does not implement (fd_seek,
// fd_tell, fd_filestat_set_size).
func (s *State) fdUnsupported(fd int32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	return ENOSYS
}

// fdFdstatGet checks the result range before the descriptor.
func (s *State) fdFdstatGet(mem Memory, fd int32, out uint32) Errno {
	b, ok := mem.Read(out, 24)
	if !ok {
		return EFAULT
	}
	if !s.lookup(fd) {
		return EBADF
	}
	le.PutUint16(b[0:], filetypeBlockDevice)
	le.PutUint16(b[2:], 0) // fdflags: not append, not nonblocking
	le.PutUint32(b[4:], 0)
	le.PutUint64(b[8:], stdioRights)
	le.PutUint64(b[16:], 0) // rights inheriting
	return ESUCCESS
}

func (s *State) fdFdstatSetFlags(fd int32, flags uint16) Errno {
	if flags&(fdflagDsync|fdflagRsync|fdflagSync) != 0 {
		return EINVAL
	}
	if !s.lookup(fd) {
		return EBADF
	}
	if flags&fdflagNonblock != 0 {
		return ENOSYS // stdio cannot be made non-blocking
	}
	return ESUCCESS // append is ignored on a device
}

func (s *State) fdFilestatGet(mem Memory, fd int32, out uint32) Errno {
	b, ok := mem.Read(out, 64)
	if !ok {
		return EFAULT
	}
	if !s.lookup(fd) {
		return EBADF
	}
	le.PutUint64(b[0:], 0) // dev
	le.PutUint64(b[8:], 0) // ino
	le.PutUint64(b[16:], filetypeBlockDevice)
	le.PutUint64(b[24:], 1) // nlink
	le.PutUint64(b[32:], 0) // size
	le.PutUint64(b[40:], 0) // atim
	le.PutUint64(b[48:], 0) // mtim
	le.PutUint64(b[56:], 0) // ctim
	return ESUCCESS
}

// fdFilestatSetTimes: stdio has no times to set. (wazero falls back to its
// filesystem, which stdio does not have, and traps on the nil; see the
// package documentation.)
func (s *State) fdFilestatSetTimes(fd int32, fstFlags uint16) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	if errno := s.toTimes(fstFlags); errno != ESUCCESS {
		return errno
	}
	return ENOSYS
}

// toTimes validates fst_flags and, as wazero, reads the wall clock (once)
// when a time is to be set to now — which advances a fake clock.
func (s *State) toTimes(fstFlags uint16) Errno {
	readNow := false
	if set, now := fstFlags&fstAtim != 0, fstFlags&fstAtimNow != 0; set && now {
		return EINVAL
	} else if now {
		readNow = s.walltime() != 0
	}
	if set, now := fstFlags&fstMtim != 0, fstFlags&fstMtimNow != 0; set && now {
		return EINVAL
	} else if now && !readNow {
		s.walltime()
	}
	return ESUCCESS
}

// fdPrestatGet: no descriptor is a preopened directory, but wazero reports
// stdio (which it marks preopened) as one with an empty name.
func (s *State) fdPrestatGet(mem Memory, fd int32, out uint32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	if !putU64(mem, out, 0) { // tag dir, name length 0
		return EFAULT
	}
	return ESUCCESS
}

func (s *State) fdPrestatDirName(mem Memory, fd int32, path, pathLen uint32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	if pathLen > 0 { // the name is empty
		return ENAMETOOLONG
	}
	if _, ok := mem.Read(path, 0); !ok {
		return EFAULT
	}
	return ESUCCESS
}

func (s *State) fdReaddir(fd int32, bufLen uint32) Errno {
	if bufLen < direntSize {
		return EINVAL
	}
	return EBADF // closed, or not a directory
}

// fdRenumber: stdio descriptors are preopened, which wazero refuses to
// renumber, and there are no others.
func (s *State) fdRenumber(from, to int32) Errno {
	if !s.lookup(from) || to < 0 {
		return EBADF
	}
	return ENOTSUP
}

// fdRead is fd_read and fd_pread (wazero's readv). The iovec array's size
// is computed in 32 bits, as wazero does. A zero-length iovec is skipped;
// reading stops at the first short read: stdin is at EOF, so fd_read of
// stdin reads nothing after the first non-empty iovec, and stdout, stderr
// and pread cannot read (EBADF).
func (s *State) fdRead(mem Memory, fd int32, iovs, iovsCount, resultPtr uint32, pread bool) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	stop := iovsCount << 3
	iovsBuf, ok := mem.Read(iovs, stop)
	if !ok {
		return EFAULT
	}
	for pos := uint32(0); pos < stop; pos += 8 {
		if pos&(checkEvery*8-1) == 0 && pos > 0 {
			s.check()
		}
		off, l := le.Uint32(iovsBuf[pos:]), le.Uint32(iovsBuf[pos+4:])
		if l == 0 {
			continue
		}
		if _, ok := mem.Read(off, l); !ok {
			return EFAULT
		}
		if pread || fd != 0 {
			return EBADF
		}
		break // stdin: EOF, a short read
	}
	if !putU32(mem, resultPtr, 0) {
		return EFAULT
	}
	return ESUCCESS
}

// fdWrite is fd_write and fd_pwrite (wazero's writev). Every iovec is
// bounds-checked, even an empty one, and written on its own. stdin cannot
// be written, nor can stdio at an offset (EBADF), except with empty iovecs.
func (s *State) fdWrite(mem Memory, fd int32, iovs, iovsCount, resultPtr uint32, pwrite bool) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	var w io.Writer
	switch fd {
	case 1:
		w = s.stdout
	case 2:
		w = s.stderr
	}
	stop := iovsCount << 3
	iovsBuf, ok := mem.Read(iovs, stop)
	if !ok {
		return EFAULT
	}
	var n uint32
	for pos := uint32(0); pos < stop; pos += 8 {
		if pos&(checkEvery*8-1) == 0 && pos > 0 {
			s.check()
		}
		off, l := le.Uint32(iovsBuf[pos:]), le.Uint32(iovsBuf[pos+4:])
		b, ok := mem.Read(off, l)
		if !ok {
			return EFAULT
		}
		switch {
		case pwrite && l == 0:
			continue
		case pwrite || w == nil:
			return EBADF
		}
		k, err := w.Write(b)
		n += uint32(k)
		if err != nil && err != io.EOF {
			return EIO
		}
	}
	if !putU32(mem, resultPtr, n) {
		return EFAULT
	}
	return ESUCCESS
}

// randomChunk is how much random_get reads between two interrupt checks.
const randomChunk = 1 << 20

// randomGet fills the guest's buffer in place, in chunks so an interrupt
// stops a large request; a test's fixed stream does not depend on how it
// is read.
func (s *State) randomGet(mem Memory, buf, n uint32) Errno {
	b, ok := mem.Read(buf, n)
	if !ok {
		return EFAULT
	}
	for len(b) > 0 {
		k := min(len(b), randomChunk)
		if _, err := io.ReadFull(s.random, b[:k]); err != nil {
			return EIO
		}
		b = b[k:]
		if len(b) > 0 {
			s.check()
		}
	}
	return ESUCCESS
}
