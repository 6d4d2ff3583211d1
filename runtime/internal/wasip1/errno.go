package wasip1

import "encoding/binary"

// Errno is a WASI errno (witx numbering).
type Errno = uint32

// The errnos this implementation returns.
const (
	ESUCCESS     Errno = 0
	EBADF        Errno = 8
	EFAULT       Errno = 21
	EINVAL       Errno = 28
	EIO          Errno = 29
	ENAMETOOLONG Errno = 37
	ENOSYS       Errno = 52
	ENOTDIR      Errno = 54
	ENOTSUP      Errno = 58
	EPERM        Errno = 63
)

// Clock ids.
const (
	clockRealtime  = 0
	clockMonotonic = 1
)

// Event and subscription types of poll_oneoff.
const (
	eventClock   = 0
	eventFdRead  = 1
	eventFdWrite = 2
)

// fd flags (fdflags).
const (
	fdflagAppend   = 1 << 0
	fdflagDsync    = 1 << 1
	fdflagNonblock = 1 << 2
	fdflagRsync    = 1 << 3
	fdflagSync     = 1 << 4
)

// fst_flags of the *_set_times functions.
const (
	fstAtim    = 1 << 0
	fstAtimNow = 1 << 1
	fstMtim    = 1 << 2
	fstMtimNow = 1 << 3
)

// filetypeBlockDevice is what stdio reports: wazero's stdio files are
// fs.ModeDevice without fs.ModeCharDevice.
const filetypeBlockDevice = 1

// stdioRights are the fs_rights_base of a stdio descriptor (wazero's
// rights of a file that is not a directory): fd_datasync, fd_read, fd_seek,
// fd_fdstat_set_flags, fd_sync, fd_tell, fd_write, fd_advise,
// fd_allocate, fd_filestat_get, fd_filestat_set_size,
// fd_filestat_set_times and poll_fd_readwrite.
const stdioRights = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 |
	1<<21 | 1<<22 | 1<<23 | 1<<27

// direntSize is the size of a dirent header.
const direntSize = 24

var le = binary.LittleEndian

// putU32 and putU64 write a little-endian value, or report false when out
// of bounds (wazero's WriteUint32Le and WriteUint64Le).
func putU32(mem Memory, off, v uint32) bool {
	b, ok := mem.Read(off, 4)
	if !ok {
		return false
	}
	le.PutUint32(b, v)
	return true
}

func putU64(mem Memory, off uint32, v uint64) bool {
	b, ok := mem.Read(off, 8)
	if !ok {
		return false
	}
	le.PutUint64(b, v)
	return true
}
