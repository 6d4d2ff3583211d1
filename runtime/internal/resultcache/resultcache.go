// Package resultcache keeps, next to the compiled code, what an inspect
// or a load learnt of a module that a later static inspect of the same
// bytes need not learn again: that the bytes passed precheck's limits
// (precheck is most of a static inspect's time on a large module: 60-90
// ms of the Hetzner guest's 11.5 MB), and what a run read by calling
// wasmprov_abi_version and wasmprov_capabilities. A Go guest's exports
// are not constant bodies (they are Go's wasmexport wrappers), so without
// the cache a static inspect of a Go guest cannot tell its ABI version or
// capabilities.
//
// Entries are keyed by the module's sha256 (the file name, and again in
// the content, so a file renamed or copied over another is a miss) and
// carry the host and ABI versions that wrote them: another host reads
// them as a miss; the limits precheck passed are recorded with the key of
// the limits they stood for, so a change of either checks again. Anything
// that does not read back exactly (a damaged, truncated, oversized or
// foreign file) is a miss, never an error to the caller's caller: the
// cache only saves work. The directory has the trust of the compiled code
// next to it: whoever can write there can change what runs.
package resultcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
)

const (
	// Subdir is the cache's directory under the compilation cache
	// directory; its version changes with Entry's encoding.
	Subdir = "wasmprov-inspect-v1"
	// maxFile bounds what a read of an entry takes; a real entry is
	// about 300 bytes.
	maxFile = 4096
)

// Entry is what is known of one module.
type Entry struct {
	SHA256 string `json:"sha256"`
	Host   string `json:"host"`
	ABI    int    `json:"abi"`
	// Prechecked is the precheck.Limits.Key of the limits the bytes
	// passed, "" if none is known.
	Prechecked      string `json:"prechecked,omitempty"`
	ABIVersion      int32  `json:"abiVersion"`
	ABIVersionKnown bool   `json:"abiVersionKnown"`
	Declared        uint64 `json:"declared"`
	DeclaredKnown   bool   `json:"declaredKnown"`
}

// Cache is the result cache under one directory, written and read by one
// host version for one ABI version. The zero Cache (no directory) keeps
// nothing.
type Cache struct {
	dir  string
	host string
	abi  int
}

// New is the cache under cacheDir (none if cacheDir is "") for entries
// written by host version host at ABI version abiVersion.
func New(cacheDir, host string, abiVersion int) Cache {
	if cacheDir == "" {
		return Cache{}
	}
	return Cache{dir: filepath.Join(cacheDir, Subdir), host: host, abi: abiVersion}
}

// Enabled reports whether the cache keeps anything.
func (c Cache) Enabled() bool { return c.dir != "" }

// path is the entry of the module whose sha256 is sum, "" if the cache is
// off or sum is not a sha256 in lower-case hex (the only names it writes,
// so a sum cannot name a file outside the directory).
func (c Cache) path(sum string) string {
	if c.dir == "" || len(sum) != 64 {
		return ""
	}
	for _, r := range sum {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return ""
		}
	}
	return filepath.Join(c.dir, sum+".json")
}

// Get returns the entry of the module sum. A miss is (nil, nil) when
// there is no entry (or no cache), and (nil, an error saying why) when an
// entry is there but not one this host wrote for these bytes.
func (c Cache) Get(sum string) (*Entry, error) {
	path := c.path(sum)
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxFile)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case e.SHA256 != sum:
		return nil, fmt.Errorf("%s: an entry for module %q", path, e.SHA256)
	case e.Host != c.host || e.ABI != c.abi:
		return nil, fmt.Errorf("%s: written by host %s (ABI %d)", path, e.Host, e.ABI)
	}
	return &e, nil
}

// Put records e (its SHA256 names the module; Host and ABI are the
// cache's), replacing any entry: readers, in this process or another,
// see the old entry or the new one, never half of one. Put on a disabled
// cache, or of an entry whose SHA256 is not a sha256, writes nothing.
func (c Cache) Put(e Entry) error {
	path := c.path(e.SHA256)
	if path == "" {
		return nil
	}
	e.Host, e.ABI = c.host, c.abi
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return cachefile.Write(path, b)
}
