package oci

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
)

// Store is a local content store: blobs (manifests, configs, modules) in
// a directory, each in a file named by its SHA-256 digest. Several
// processes may share one: a blob is written to a temporary file and
// renamed into place (package cachefile), so a reader sees the whole blob
// or none, and every read verifies the content against its name, so a
// damaged file is a miss (it is removed and fetched again).
type Store struct {
	dir      string
	maxBytes int64

	mu   sync.Mutex
	pins map[string][]digest.Digest // by owner

	// writeFile writes a file of the store whole or not at all; a test
	// replaces it to fill the disk.
	writeFile func(path string, b []byte) error
}

func (s *Store) write(path string, b []byte) error {
	if s.writeFile != nil {
		return s.writeFile(path, b)
	}
	return cachefile.Write(path, b)
}

// DefaultStoreBytes is the size a store is trimmed to when none is given.
const DefaultStoreBytes = 1 << 30

// gcGrace spares blobs this young from collection: a concurrent pull
// writes a module before the manifest that references it.
const gcGrace = time.Minute

// OpenStore opens (creating) the store in dir, trimmed to maxBytes (0:
// DefaultStoreBytes) by GC.
func OpenStore(dir string, maxBytes int64) (*Store, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultStoreBytes
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, err
	}
	return &Store{dir: dir, maxBytes: maxBytes}, nil
}

// Pin replaces the set of manifests owner pins with manifests (none:
// owner pins nothing any more). GC never removes a pinned manifest nor
// the blobs it references, whatever the size limit and however long ago
// they were used: a registry pins what serves and what it may roll back
// to without the network. Pins live in this Store value, not on disk:
// another process sharing the directory does not see them.
func (s *Store) Pin(owner string, manifests ...digest.Digest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(manifests) == 0 {
		delete(s.pins, owner)
		return
	}
	if s.pins == nil {
		s.pins = map[string][]digest.Digest{}
	}
	s.pins[owner] = slices.Clone(manifests)
}

// pinned returns the set of manifests pinned by any owner.
func (s *Store) pinned() map[digest.Digest]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[digest.Digest]bool{}
	for _, ds := range s.pins {
		for _, d := range ds {
			out[d] = true
		}
	}
	return out
}

// Store is the client's content store (nil if it keeps none), for
// pinning what must stay (Store.Pin).
func (c *Client) Store() *Store { return c.opts.Store }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(d digest.Digest) string {
	return filepath.Join(s.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// Get returns the blob d if the store has it intact and it is at most
// max bytes. A damaged blob is removed and reported missing.
func (s *Store) Get(d digest.Digest, max int64) ([]byte, bool) {
	if d.Validate() != nil || d.Algorithm() != digest.SHA256 {
		return nil, false
	}
	p := s.path(d)
	st, err := os.Stat(p)
	if err != nil || st.Size() > max {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if digest.FromBytes(b) != d {
		_ = os.Remove(p)
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used: trimmed last
	return b, true
}

// Put stores b, which must have digest d.
func (s *Store) Put(d digest.Digest, b []byte) error {
	if got := digest.FromBytes(b); got != d {
		return fmt.Errorf("%w: content has digest %s, not %s", ErrRefused, got, d)
	}
	return s.write(s.path(d), b)
}

type blobFile struct {
	d    digest.Digest
	size int64
	used time.Time
}

// GC removes every blob that no stored Wasm manifest references (other
// than blobs written in the last minute), then, while the store is over
// its size, the least recently used manifests that are not pinned (Pin)
// and what only they referenced. It returns the number of bytes freed.
func (s *Store) GC() (int64, error) {
	blobs, err := s.list()
	if err != nil {
		return 0, err
	}
	var freed int64
	remove := func(b blobFile) {
		if os.Remove(s.path(b.d)) == nil {
			freed += b.size
		}
	}
	// Manifests, least recently used first, and what each references; a
	// referrer (a signature) lives and goes with its subject.
	var manifests []blobFile
	refs := map[digest.Digest][]digest.Digest{}
	for _, b := range blobs {
		// Read without touching its time (Get would): collecting is
		// not using, and the LRU order must survive it.
		m, ok := s.readManifest(b)
		if !ok {
			continue
		}
		own := append([]digest.Digest{m.Config.Digest}, layerDigests(m)...)
		if m.Subject != nil {
			refs[m.Subject.Digest] = append(append(refs[m.Subject.Digest], b.d), own...)
			continue
		}
		manifests = append(manifests, b)
		refs[b.d] = append(refs[b.d], own...)
	}
	sort.Slice(manifests, func(i, j int) bool { return manifests[i].used.Before(manifests[j].used) })
	var total int64
	for _, b := range blobs {
		total += b.size
	}
	pinned := s.pinned()
	dropped := map[digest.Digest]bool{}
	for _, m := range manifests {
		if total-freed <= s.maxBytes {
			break
		}
		if pinned[m.d] {
			continue
		}
		remove(m)
		dropped[m.d] = true
	}
	live := map[digest.Digest]bool{}
	for _, m := range manifests {
		if dropped[m.d] {
			continue
		}
		live[m.d] = true
		for _, d := range refs[m.d] {
			live[d] = true
		}
	}
	young := time.Now().Add(-gcGrace)
	for _, b := range blobs {
		if !live[b.d] && !dropped[b.d] && !pinned[b.d] && b.used.Before(young) {
			remove(b)
		}
	}
	s.gcMeta(func(d digest.Digest) bool { return live[d] || pinned[d] })
	return freed, nil
}

func layerDigests(m ocispec.Manifest) []digest.Digest {
	out := make([]digest.Digest, len(m.Layers))
	for i, l := range m.Layers {
		out[i] = l.Digest
	}
	return out
}

// list returns the store's blobs (temporary files and strays excluded).
func (s *Store) list() ([]blobFile, error) {
	dir := filepath.Join(s.dir, "blobs", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []blobFile
	for _, e := range entries {
		d := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
		if d.Validate() != nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, blobFile{d: d, size: info.Size(), used: info.ModTime()})
	}
	return out, nil
}
