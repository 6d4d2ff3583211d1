package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
)

// What the store keeps besides blobs, so that what was learnt online
// serves offline:
//
//	referrers/sha256/<subject>/<sha256 of the repository>
//	                             the referrers of a manifest (signatures)
//	tags/<sha256 of the ref>     the digest a tag last resolved to
//	notes/sha256/<subject>/<k>   small records about a manifest, e.g. a
//	                             verification (runtime/signature)
//
// None of it is trusted by itself: a referrer index only names blobs,
// which are verified against their digests when read, and a note or a tag
// says what was true when it was written, which its reader must weigh.

// referrerIndex is the content of referrers/sha256/<subject>/<repo>.
type referrerIndex struct {
	Repository string          `json:"repository"`
	Referrers  []digest.Digest `json:"referrers"`
}

// ErrDamaged: a blob of the store did not match its digest; it was
// removed.
var ErrDamaged = errors.New("damaged in the local store")

// referrerIndexPath is where the referrers of subject in repository
// (registry/repository) are listed. Referrers are kept per repository,
// as a registry keeps them: a signature attached in one repository does
// not sign the same manifest pushed to another, offline either.
func (s *Store) referrerIndexPath(repository string, subject digest.Digest) string {
	sum := sha256.Sum256([]byte(repository))
	return filepath.Join(s.dir, "referrers", subject.Algorithm().String(), subject.Encoded(), hex.EncodeToString(sum[:]))
}

// putReferrers stores refs (each with the manifest it was fetched as) as
// referrers of subject in repository, adding to those already stored.
func (s *Store) putReferrers(repository string, subject digest.Digest, refs []Referrer) error {
	if subject.Validate() != nil || subject.Algorithm() != digest.SHA256 {
		return fmt.Errorf("%w: subject %q is not a sha256 digest", ErrRefused, subject)
	}
	idx := s.readReferrerIndex(repository, subject)
	idx.Repository = repository
	for _, r := range refs {
		if r.manifest == nil {
			continue
		}
		empty := ocispec.DescriptorEmptyJSON
		for _, b := range []struct {
			d    digest.Digest
			data []byte
		}{{digest.FromBytes(r.Data), r.Data}, {empty.Digest, empty.Data}, {r.Digest, r.manifest}} {
			if err := s.Put(b.d, b.data); err != nil {
				return err
			}
		}
		if !slices.Contains(idx.Referrers, r.Digest) {
			idx.Referrers = append(idx.Referrers, r.Digest)
		}
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return s.write(s.referrerIndexPath(repository, subject), b)
}

func (s *Store) readReferrerIndex(repository string, subject digest.Digest) referrerIndex {
	var idx referrerIndex
	b, err := os.ReadFile(s.referrerIndexPath(repository, subject))
	if err == nil && json.Unmarshal(b, &idx) == nil && idx.Repository == repository {
		return idx
	}
	return referrerIndex{}
}

// storedReferrers returns the referrers of subject in repository of
// artifactType ("": any) the store holds. A referrer whose manifest or
// blob is damaged is left out and reported in the error (joined with
// ErrDamaged); one that is not a referrer of subject is left out
// silently.
func (s *Store) storedReferrers(repository string, subject digest.Digest, artifactType string) ([]Referrer, error) {
	var (
		out  []Referrer
		errs []error
	)
	for _, d := range s.readReferrerIndex(repository, subject).Referrers {
		raw, ok := s.Get(d, maxReferrerSize)
		if !ok {
			errs = append(errs, fmt.Errorf("referrer %s: %w", d, ErrDamaged))
			continue
		}
		r, layer, ok := referrerOf(d, raw, subject)
		if !ok || (artifactType != "" && r.ArtifactType != artifactType) {
			continue
		}
		data, ok := s.Get(layer, maxReferrerSize)
		if !ok {
			errs = append(errs, fmt.Errorf("referrer %s: blob %s: %w", d, layer, ErrDamaged))
			continue
		}
		r.Data = data
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// referrerOf reads a referrer manifest: one bounded layer, subject the
// given digest. It returns the referrer, its Data not filled in, and the
// digest of the layer that holds it.
func referrerOf(d digest.Digest, raw []byte, subject digest.Digest) (Referrer, digest.Digest, bool) {
	var m ocispec.Manifest
	if json.Unmarshal(raw, &m) != nil || len(m.Layers) != 1 || m.Layers[0].Size > maxReferrerSize ||
		m.Subject == nil || m.Subject.Digest != subject {
		return Referrer{}, "", false
	}
	at := m.ArtifactType
	if at == "" {
		at = m.Config.MediaType
	}
	return Referrer{Digest: d, ArtifactType: at, MediaType: m.Layers[0].MediaType, manifest: raw}, m.Layers[0].Digest, true
}

// StoredReferrers returns the referrers of artifactType ("": any) of the
// manifest ref pins (registry/repository@sha256:…) that the client's
// store holds for that repository: those Referrers fetched before, and
// those Load brought. No request is made. A damaged one is removed from
// the store and named in the error (ErrDamaged); the others are returned
// with it.
func (c *Client) StoredReferrers(ref, artifactType string) ([]Referrer, error) {
	r, err := parse(ref)
	if err != nil {
		return nil, err
	}
	d, err := r.Digest()
	if err != nil {
		return nil, fmt.Errorf("%s: stored referrers are of a manifest by digest (@sha256:…)", ref)
	}
	if c.opts.Store == nil {
		return nil, nil
	}
	return c.opts.Store.storedReferrers(repositoryOf(r), d, artifactType)
}

// repositoryOf names r's repository as referrers are kept under it.
func repositoryOf(r registry.Reference) string { return r.Registry + "/" + r.Repository }

// Resolution is what a tag last resolved to.
type Resolution struct {
	Ref    string        `json:"ref"`
	Digest digest.Digest `json:"digest"`
	At     time.Time     `json:"at"`
}

func (s *Store) tagPath(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(s.dir, "tags", hex.EncodeToString(sum[:]))
}

// rememberTag records that ref (a tag) resolved to d now.
func (s *Store) rememberTag(ref string, d digest.Digest) error {
	b, err := json.Marshal(Resolution{Ref: ref, Digest: d, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	return s.write(s.tagPath(ref), b)
}

// LastResolved returns what the tag ref resolved to when it was last
// resolved (Resolve or Pull) with this store, if the store still holds
// that manifest: the last known good to serve while the registry cannot
// be reached. The caller says it is stale.
func (c *Client) LastResolved(ref string) (Resolution, bool) {
	s := c.opts.Store
	if s == nil {
		return Resolution{}, false
	}
	b, err := os.ReadFile(s.tagPath(ref))
	if err != nil {
		return Resolution{}, false
	}
	var res Resolution
	if json.Unmarshal(b, &res) != nil || res.Ref != ref || res.Digest.Validate() != nil {
		return Resolution{}, false
	}
	if _, ok := s.Get(res.Digest, maxManifestSize); !ok {
		return Resolution{}, false
	}
	return res, true
}

var noteNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

func (s *Store) notePath(subject digest.Digest, name string) (string, error) {
	if subject.Validate() != nil || subject.Algorithm() != digest.SHA256 || !noteNameRE.MatchString(name) {
		return "", fmt.Errorf("note %q of %q: invalid name or digest", name, subject)
	}
	return filepath.Join(s.dir, "notes", subject.Algorithm().String(), subject.Encoded(), name), nil
}

// PutNote records b under name for the manifest subject; GC removes it
// with the manifest. A note is a record, not a proof: whoever reads it
// checks what it claims.
func (s *Store) PutNote(subject digest.Digest, name string, b []byte) error {
	p, err := s.notePath(subject, name)
	if err != nil {
		return err
	}
	return s.write(p, b)
}

// Note returns the note name of subject, if there is one.
func (s *Store) Note(subject digest.Digest, name string) ([]byte, bool) {
	p, err := s.notePath(subject, name)
	if err != nil {
		return nil, false
	}
	b, err := os.ReadFile(p)
	return b, err == nil
}

// gcMeta removes the referrer indexes and notes of manifests the store no
// longer holds, and tags that name one, sparing what was written in the
// last gcGrace: a pull verifies (and stores signatures) before it stores
// the manifest they refer to, maybe in another process.
func (s *Store) gcMeta(held func(digest.Digest) bool) {
	young := time.Now().Add(-gcGrace)
	old := func(e fs.DirEntry) bool {
		info, err := e.Info()
		return err == nil && info.ModTime().Before(young)
	}
	for _, kind := range []string{"referrers", "notes"} {
		dir := filepath.Join(s.dir, kind, "sha256")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			d := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
			if d.Validate() == nil && !held(d) && old(e) { // a digest, not a temporary file
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	dir := filepath.Join(s.dir, "tags")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if len(e.Name()) != 2*sha256.Size || !old(e) { // temporary, or young
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var res Resolution
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || json.Unmarshal(b, &res) != nil || !held(res.Digest) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// RepositoryOf returns the repository ref names (registry/repository),
// the scope referrers and what is recorded of them are kept in.
func RepositoryOf(ref string) (string, error) {
	r, err := parse(ref)
	if err != nil {
		return "", err
	}
	return repositoryOf(r), nil
}
