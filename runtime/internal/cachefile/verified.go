package cachefile

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"os"
)

// A verified file is
//
//	crc32c(rest) ‖ rest, where rest = sha256(body) ‖ body
//
// so that a damaged, truncated or foreign file reads as a miss rather than
// as content that fails later (a module that does not compile), and so that
// a reader gets the body's SHA-256 (which callers key compiled code by)
// without hashing the body again.
//
// The integrity check is a CRC-32C, not the SHA-256: it is there to detect
// a damaged file (a torn disk write, a bit flip, a file of another
// program), which a CRC detects, not an attacker. Whoever can write the
// cache directory can write the engines' compiled machine code there too,
// which no checksum of ours protects (docs/SECURITY.md, runtime/RATIONALE.md:
// the cache directory is trusted like the binary). Checking a 12 MB
// instrumented Go guest costs about a millisecond with the CRC, against
// several with SHA-256 on every warm start.
const (
	crcSize    = 4
	headerSize = crcSize + sha256.Size
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteVerified writes a verified file of body to path atomically (Write)
// and returns body's SHA-256.
func WriteVerified(path string, body []byte) ([sha256.Size]byte, error) {
	sum := sha256.Sum256(body)
	b := make([]byte, headerSize, headerSize+len(body))
	copy(b[crcSize:], sum[:])
	b = append(b, body...)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[crcSize:], castagnoli))
	return sum, Write(path, b)
}

// ReadVerified returns the body of a file WriteVerified wrote and the
// SHA-256 recorded with it. A missing, unreadable, short or damaged file is
// ok == false.
func ReadVerified(path string) (body []byte, sum [sha256.Size]byte, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < headerSize {
		return nil, sum, false
	}
	if binary.LittleEndian.Uint32(b) != crc32.Checksum(b[crcSize:], castagnoli) {
		return nil, sum, false
	}
	copy(sum[:], b[crcSize:headerSize])
	return b[headerSize:], sum, true
}
