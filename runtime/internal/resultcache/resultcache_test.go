package resultcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sumA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func TestPutGet(t *testing.T) {
	dir := t.TempDir()
	c := New(dir, "1.2.3", 1)
	if e, err := c.Get(sumA); e != nil || err != nil {
		t.Fatalf("empty cache: %+v, %v; want a silent miss", e, err)
	}
	want := Entry{SHA256: sumA, Prechecked: "t=10", ABIVersion: 1, ABIVersionKnown: true, Declared: 0x3, DeclaredKnown: true}
	if err := c.Put(want); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(sumA)
	want.Host, want.ABI = "1.2.3", 1 // the cache's, whatever the caller put
	if err != nil || got == nil || *got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, Subdir, sumA+".json")); err != nil {
		t.Fatalf("entry not where a reader of the directory finds it: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, Subdir, "*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	// Another host or ABI version reads the entry as a miss that says why.
	for name, other := range map[string]Cache{"host": New(dir, "9.9.9", 1), "ABI": New(dir, "1.2.3", 2)} {
		if e, err := other.Get(sumA); e != nil || err == nil || !strings.Contains(err.Error(), "written by host 1.2.3") {
			t.Errorf("other %s: %+v, %v; want a miss naming the writer", name, e, err)
		}
	}
}

func TestDamagedEntriesAreMisses(t *testing.T) {
	dir := t.TempDir()
	c := New(dir, "1.2.3", 1)
	if err := c.Put(Entry{SHA256: sumA, ABIVersionKnown: true, ABIVersion: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Subdir, sumA+".json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sumB := strings.Repeat("b", 64)
	for name, b := range map[string][]byte{
		"truncated":   good[:len(good)/2],
		"not JSON":    []byte("\x00\xff"),
		"empty":       nil,
		"oversized":   append([]byte(`{"sha256":"`+sumA+`","pad":"`), append([]byte(strings.Repeat("x", maxFile)), '"', '}')...),
		"other sum":   []byte(strings.Replace(string(good), sumA, sumB, 1)),
		"wrong types": []byte(`{"sha256":1}`),
	} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if e, err := c.Get(sumA); e != nil || err == nil {
			t.Errorf("%s: %+v, %v; want a miss with its reason", name, e, err)
		}
	}
}

// A sum is a file name: anything but 64 lower-case hex digits names no
// file, so it cannot reach outside the cache directory.
func TestOnlySHA256Names(t *testing.T) {
	dir := t.TempDir()
	c := New(filepath.Join(dir, "cache"), "1.2.3", 1)
	for _, sum := range []string{"", "../../escape", strings.Repeat("A", 64), strings.Repeat("a", 63), "../" + strings.Repeat("a", 61)} {
		if err := c.Put(Entry{SHA256: sum}); err != nil {
			t.Fatalf("put %q: %v", sum, err)
		}
		if e, err := c.Get(sum); e != nil || err != nil {
			t.Errorf("get %q: %+v, %v; want a silent miss", sum, e, err)
		}
	}
	var files []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Fatalf("files written for sums that are not sha256s: %q", files)
	}
}

func TestDisabled(t *testing.T) {
	c := New("", "1.2.3", 1)
	if c.Enabled() {
		t.Fatal("a cache without a directory is enabled")
	}
	if err := c.Put(Entry{SHA256: sumA}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Get(sumA); e != nil || err != nil {
		t.Fatalf("%+v, %v; want a silent miss", e, err)
	}
}
