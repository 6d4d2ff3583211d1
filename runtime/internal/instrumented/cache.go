// Package instrumented gives both engines their interruptible modules: the
// output of interrupt.InstrumentWith, kept on disk next to the compiled
// code. Rewriting an 11 MB Go guest takes hundreds of milliseconds, which a
// process starting with a warm compilation cache would otherwise pay on
// every load before the engine could even look its compiled code up.
package instrumented

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// Key names one instrumented module: the original module's SHA-256, the
// flag it was instrumented with and the instrumenter's output format.
type Key struct {
	Module [sha256.Size]byte
	Flag   interrupt.Flag
	Format int
}

// Cache instruments modules, reusing what an earlier call or process wrote
// to its directory. It is safe for concurrent use, and processes may share
// its directory: files are written atomically and read only once their
// digest checks out.
type Cache struct {
	dir          string // "" when nothing is kept
	hits, misses atomic.Int64
}

// NewCache returns a cache keeping its files under dir, or, for "", one
// that keeps nothing and instruments on every call (the engines then cache
// compiled code in memory, and an instrumented module kept in memory as
// well would double the memory a module costs for nothing a caller loading
// a module once needs).
func NewCache(dir string) *Cache { return &Cache{dir: dir} }

// Module returns wasm instrumented with f and the result's SHA-256, which
// an engine may key its compiled code by. A file that is missing, short,
// damaged or unreadable is a miss: the module is instrumented again and the
// file rewritten, best effort (a cache that cannot be written only costs
// the next load the rewrite). The error is the instrumenter's, for a
// module it cannot read.
func (c *Cache) Module(wasm []byte, f interrupt.Flag) (out []byte, digest [sha256.Size]byte, err error) {
	var path string
	if c.dir != "" {
		path = c.Path(Key{Module: sha256.Sum256(wasm), Flag: f, Format: interrupt.FormatVersion})
		if out, digest, ok := cachefile.ReadVerified(path); ok {
			c.hits.Add(1)
			return out, digest, nil
		}
	}
	c.misses.Add(1)
	if out, err = interrupt.InstrumentWith(wasm, f); err != nil {
		return nil, digest, err
	}
	if path == "" {
		return out, sha256.Sum256(out), nil
	}
	digest, _ = cachefile.WriteVerified(path, out) // best effort, see above
	return out, digest, nil
}

// Stats reports how many calls of Module were served from disk (hits) and
// how many instrumented the module (misses).
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Path is the file of k: <dir>/wasmprov-instrumented-v<Format>/<flag>/<hex
// of Module>.wasm. It is "" for a cache that keeps nothing.
func (c *Cache) Path(k Key) string {
	if c.dir == "" {
		return ""
	}
	return filepath.Join(c.dir, fmt.Sprintf("wasmprov-instrumented-v%d", k.Format), flagName(k.Flag),
		hex.EncodeToString(k.Module[:])+".wasm")
}

// flagName names a flag's directory. Names, not the constants' values: the
// values follow the order of their declaration, which may change without
// the output format changing, and a module instrumented for one flag must
// never be read as another's.
func flagName(f interrupt.Flag) string {
	switch f {
	case interrupt.FlagBudget:
		return "budget"
	case interrupt.FlagMemory:
		return "memory"
	}
	return fmt.Sprintf("flag%d", f)
}
