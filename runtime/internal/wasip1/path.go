package wasip1

import (
	"bytes"
	"unicode/utf8"
)

// atPath is how every path function starts in wazero, and with no
// preopened directory it is also where each ends: the path is read
// (EFAULT), cleaned and refused unless it is a valid relative path
// (EPERM), and only then is the descriptor looked up: EBADF when it is not
// open, ENOTDIR when it is (stdio is not a directory).
func (s *State) atPath(mem Memory, fd int32, path, pathLen uint32) Errno {
	b, ok := mem.Read(path, pathLen)
	if !ok {
		return EFAULT
	}
	if !s.validPath(b) {
		return EPERM
	}
	return s.dirFd(fd)
}

// dirFd is the errno of using fd as a directory.
func (s *State) dirFd(fd int32) Errno {
	if !s.lookup(fd) {
		return EBADF
	}
	return ENOTDIR
}

// validPath reports fs.ValidPath(path.Clean(string(p))) — wazero's test —
// without copying or rewriting p, in one pass that checks for an interrupt
// every checkEvery*256 bytes, since p may be as large as the guest's
// memory.
//
// Clean's result is rooted exactly when p is, and fs.ValidPath refuses any
// rooted path. Otherwise Clean keeps the elements other than "" and ".",
// each ".." removing the element before it; a ".." with nothing before it
// stays, at the front, and fs.ValidPath refuses it; and the result must be
// valid UTF-8, which it is exactly when every element kept is.
func (s *State) validPath(p []byte) bool {
	if len(p) > 0 && p[0] == '/' {
		return false
	}
	var (
		depth   int   // elements kept so far
		invalid []int // depths of the kept elements that are not UTF-8
		scanned int   // bytes since the last interrupt check
	)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '/')
		if i < 0 {
			i = len(p)
		}
		elem := p[:i]
		if i < len(p) {
			p = p[i+1:]
		} else {
			p = nil
		}
		if scanned += i + 1; scanned >= checkEvery*256 {
			s.check()
			scanned = 0
		}
		switch {
		case len(elem) == 0, len(elem) == 1 && elem[0] == '.':
		case len(elem) == 2 && elem[0] == '.' && elem[1] == '.':
			if depth == 0 {
				return false // a leading "..": never removed, always refused
			}
			if n := len(invalid); n > 0 && invalid[n-1] == depth {
				invalid = invalid[:n-1]
			}
			depth--
		default:
			depth++
			if !s.validUTF8(elem) {
				invalid = append(invalid, depth)
			}
		}
	}
	return len(invalid) == 0
}

// validUTF8 is utf8.Valid, checking for an interrupt between chunks of a
// large input. A chunk ends before a byte that starts a rune, so the input
// is valid exactly when every chunk is.
func (s *State) validUTF8(b []byte) bool {
	const chunk = checkEvery * 256
	for len(b) > chunk {
		end := chunk
		for k := 0; k < utf8.UTFMax && !utf8.RuneStart(b[end]); k++ {
			end--
		}
		if !utf8.Valid(b[:end]) {
			return false
		}
		b = b[end:]
		s.check()
	}
	return utf8.Valid(b)
}
