package cachefile

import (
	"crypto/sha256"
	"os"
)

// A verified file is the SHA-256 of its body followed by the body, so that
// a damaged, truncated or foreign file reads as a miss rather than as
// content that fails later (a module that does not compile).

// WriteVerified writes sha256(body)‖body to path atomically (Write) and
// returns the digest.
func WriteVerified(path string, body []byte) ([sha256.Size]byte, error) {
	sum := sha256.Sum256(body)
	b := make([]byte, 0, sha256.Size+len(body))
	b = append(append(b, sum[:]...), body...)
	return sum, Write(path, b)
}

// ReadVerified returns the body of a file WriteVerified wrote and its
// digest. A missing, unreadable, short or damaged file is ok == false.
func ReadVerified(path string) (body []byte, sum [sha256.Size]byte, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < sha256.Size {
		return nil, sum, false
	}
	body = b[sha256.Size:]
	if sum = sha256.Sum256(body); string(sum[:]) != string(b[:sha256.Size]) {
		return nil, [sha256.Size]byte{}, false
	}
	return body, sum, true
}
