package cachefile

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// TestVerified: what WriteVerified wrote reads back with its digest; a
// missing, short or damaged file is a miss.
func TestVerified(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.bin")
	if _, _, ok := ReadVerified(path); ok {
		t.Fatal("a missing file was a hit")
	}
	body := []byte("instrumented module")
	sum, err := WriteVerified(path, body)
	if err != nil {
		t.Fatal(err)
	}
	if sum != sha256.Sum256(body) {
		t.Fatalf("WriteVerified returned %x, want the body's SHA-256", sum)
	}
	got, gotSum, ok := ReadVerified(path)
	if !ok || !bytes.Equal(got, body) || gotSum != sum {
		t.Fatalf("ReadVerified = %q, %x, %v; want %q, %x, true", got, gotSum, ok, body, sum)
	}
	raw, _ := os.ReadFile(path)
	for name, b := range map[string][]byte{
		"empty":                  nil,
		"shorter than a header":  raw[:headerSize-1],
		"header only, body lost": raw[:headerSize],
		"body truncated":         raw[:len(raw)-1],
		"body flipped":           append(append([]byte{}, raw[:len(raw)-1]...), raw[len(raw)-1]^0xff),
		"checksum flipped":       append([]byte{raw[0] ^ 0xff}, raw[1:]...),
		"digest flipped":         flip(raw, crcSize),
		"another body appended":  append(bytes.Clone(raw), raw...),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := ReadVerified(path); ok {
			t.Errorf("%s: a damaged file was a hit", name)
		}
	}
	// A directory where the file should be is unreadable: a miss.
	if _, _, ok := ReadVerified(filepath.Dir(path)); ok {
		t.Fatal("a directory was a hit")
	}
}

// flip returns b with the byte at i inverted.
func flip(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 0xff
	return b
}
