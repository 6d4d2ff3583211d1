// Package instrumented gives both engines their interruptible modules: the
// output of interrupt.InstrumentWith, kept on disk next to the compiled
// code. Rewriting an 11 MB Go guest takes hundreds of milliseconds, which a
// process starting with a warm compilation cache would otherwise pay on
// every load before the engine could even look its compiled code up.
//
// A module the caller checks before instrumenting (Source.Check: the
// runtime's precheck against its limits) is kept under the key of the check
// too, and only once it passed: a file found under that key is the verdict
// as well as the module, so a warm load does not check again (70 ms for
// the Hetzner guest), while other limits check it again and a refusal is
// never kept.
package instrumented

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// layout is the version of this package's files and their paths, part of
// the cache directory's name with the instrumenter's format: bumped when
// either changes, so no process reads a file another layout wrote.
// 2: cachefile's CRC-32C header; the check's key in the file name.
const layout = 2

// ErrInstrument wraps the instrumenter's error, for a module it cannot
// read; Source.Check's error is returned unwrapped.
var ErrInstrument = errors.New("instrumenting")

// Key names one instrumented module: the original module's SHA-256, the
// check it passed (Source.CheckKey, "" for none), the flag it was
// instrumented with and the instrumenter's output format.
type Key struct {
	Module   [sha256.Size]byte
	CheckKey string
	Flag     interrupt.Flag
	Format   int
}

// Source is a module to instrument.
type Source struct {
	// Wasm is the module as the caller got it.
	Wasm []byte
	// Digest is Wasm's SHA-256 when the caller has it (the zero value: the
	// cache computes it), so a module is hashed once per load.
	Digest [sha256.Size]byte
	// Check, when not nil, vets Wasm before the instrumenter reads it and
	// returns the module to instrument (which may differ from Wasm: the
	// precheck gives tables a maximum). It is not run when the cache holds
	// the module under CheckKey, which must name what Check decides (the
	// limits it checks against): a file is written there only after Check
	// passed. Its error is returned unchanged.
	Check    func([]byte) ([]byte, error)
	CheckKey string
}

// Cache instruments modules, reusing what an earlier call or process wrote
// to its directory. It is safe for concurrent use, and processes may share
// its directory: files are written atomically and read only once their
// checksum checks out.
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

// Module is Get for a module checked by no one.
func (c *Cache) Module(wasm []byte, f interrupt.Flag) (out []byte, digest [sha256.Size]byte, err error) {
	return c.Get(Source{Wasm: wasm}, f)
}

// Get returns src instrumented with f (after src.Check) and the result's
// SHA-256, which an engine may key its compiled code by. A file that is
// missing, short, damaged or unreadable is a miss: the module is checked
// and instrumented again and the file rewritten, best effort (a cache that
// cannot be written only costs the next load the rewrite). The error is
// Check's, unchanged, or the instrumenter's wrapped in ErrInstrument.
func (c *Cache) Get(src Source, f interrupt.Flag) (out []byte, digest [sha256.Size]byte, err error) {
	var path string
	if c.dir != "" {
		if src.Digest == ([sha256.Size]byte{}) {
			src.Digest = sha256.Sum256(src.Wasm)
		}
		path = c.Path(Key{Module: src.Digest, CheckKey: src.CheckKey, Flag: f, Format: interrupt.FormatVersion})
		if out, digest, ok := cachefile.ReadVerified(path); ok {
			c.hits.Add(1)
			return out, digest, nil
		}
	}
	c.misses.Add(1)
	wasm := src.Wasm
	if src.Check != nil {
		if wasm, err = src.Check(wasm); err != nil {
			return nil, digest, err
		}
	}
	if out, err = interrupt.InstrumentWith(wasm, f); err != nil {
		return nil, digest, fmt.Errorf("%w: %w", ErrInstrument, err)
	}
	if path == "" {
		return out, sha256.Sum256(out), nil
	}
	digest, _ = cachefile.WriteVerified(path, out) // best effort, see above
	return out, digest, nil
}

// Stats reports how many calls of Get were served from disk (hits) and
// how many instrumented the module (misses).
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Path is the file of k: <dir>/wasmprov-instrumented-v<Format>-l<layout>/
// <flag>/<hex of Module>[-<CheckKey>].wasm. It is "" for a cache that keeps
// nothing.
func (c *Cache) Path(k Key) string {
	if c.dir == "" {
		return ""
	}
	name := hex.EncodeToString(k.Module[:])
	if k.CheckKey != "" {
		name += "-" + k.CheckKey
	}
	return filepath.Join(c.dir, fmt.Sprintf("wasmprov-instrumented-v%d-l%d", k.Format, layout), flagName(k.Flag),
		name+".wasm")
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
