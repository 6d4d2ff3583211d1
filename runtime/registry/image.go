package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"k8s.io/utils/clock"
	orasreg "oras.land/oras-go/v2/registry"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ImageEntrySuffix ends the name of an image entry in a provider
// directory: "<name>.provider.yaml" names the OCI artifact provider <name>
// is pulled from, instead of a "<name>.wasm" file.
const ImageEntrySuffix = ".provider.yaml"

// PullPolicy says when an image entry's reference is resolved again.
type PullPolicy string

// Pull policies.
const (
	// PullIfNotPresent resolves the reference once (a digest needs no
	// resolving) and pulls it only if the local store lacks it. The
	// default for a reference by digest.
	PullIfNotPresent PullPolicy = "IfNotPresent"
	// PullAlways resolves the tag again at every poll
	// (WithImagePollInterval); a new digest is a new version. The default
	// for a reference by tag.
	PullAlways PullPolicy = "Always"
)

// Image entry errors.
var (
	// ErrNoVerifier: an image entry asks for verification (a verify block)
	// but the registry has no verifier (WithVerifier). It is refused rather
	// than served unverified.
	ErrNoVerifier = errors.New("the entry has a verify block but no verifier is configured; refusing to serve it unverified")
	// ErrVerification: the verifier refused the artifact.
	ErrVerification = errors.New("verification failed")
	// ErrNoOCIClient: an image entry was found, or RegisterImage called
	// without Image.Client, but the registry has no OCI client
	// (WithOCIClient).
	ErrNoOCIClient = errors.New("images need an OCI client (registry.WithOCIClient or Image.Client)")
	// ErrInvalidImage: an Image (or an image entry) names no valid
	// reference or pull policy.
	ErrInvalidImage = errors.New("invalid image")
)

// Verifier checks the artifact an image resolved to before it may load.
// An error refuses the version; the previous one keeps serving.
type Verifier func(ctx context.Context, req VerifyRequest) error

// VerifyRequest is what a Verifier checks.
type VerifyRequest struct {
	// Provider is the provider name, Ref the image as written, Digest the
	// manifest digest it resolved to ("sha256:…").
	Provider, Ref, Digest string
	// Verify is the verify block (the signature policy) as JSON.
	Verify json.RawMessage
	// Client is the OCI client the artifact was pulled with: signatures
	// are fetched with the same credentials.
	Client *oci.Client
	// Entry is the path of the image entry file the image comes from; ""
	// for an Image registered by code (RegisterImage), which has no
	// directory that relative file names in Verify could refer to.
	Entry string
}

// imageEntry is the content of a "<name>.provider.yaml".
type imageEntry struct {
	Image      string          `json:"image"`
	PullPolicy PullPolicy      `json:"pullPolicy,omitempty"`
	Policy     json.RawMessage `json:"policy,omitempty"`
	Verify     json.RawMessage `json:"verify,omitempty"`
}

// maxVerified is how many verified artifacts an entry remembers.
const maxVerified = 16

// imageState is what an entry remembers of its image between reads.
// Guarded by the entry's loadMu.
type imageState struct {
	ref    string        // the image when last resolved
	digest digest.Digest // what it resolved to
	// verified are the artifacts that passed the Verifier, most recent
	// first: a rollback to one of them needs neither the Verifier nor the
	// network (see verifiedKey).
	verified []verifiedArtifact
	// serving is the manifest of the version serving, if it came from
	// an image; pinStore the store holding this entry's pins (nil: none).
	serving  digest.Digest
	pinStore *oci.Store
	// resolvedAt is when the image was last resolved (or read, for a
	// digest), for the staleness of what serves while it cannot be.
	resolvedAt time.Time
}

type verifiedArtifact struct {
	key    string
	digest digest.Digest
}

// imageInfo says which artifact a version came from; zero for files.
type imageInfo struct {
	ref    string // the image as written
	pinned string // repository@digest
	digest string
	store  *oci.Store // the store of the client that pulled it, if any
	// stale is set when the tag could not be resolved and the digest it
	// last resolved to (oci.Client.LastResolved) was taken instead.
	stale *staleInfo
}

// staleInfo says why a version is the last known good rather than what
// its image names now.
type staleInfo struct {
	reason string
	since  time.Time // when the tag was last resolved
}

// parseImageEntry decodes an image entry strictly, like a policy file:
// unknown fields and duplicate keys are errors. The entry becomes the
// Image RegisterImage takes, so both go through pullImage.
func parseImageEntry(b []byte) (Image, error) {
	var ie imageEntry
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return Image{}, err
	}
	strict, err := sigsjson.UnmarshalStrict(j, &ie, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Image{}, err
	}
	if err := errors.Join(strict...); err != nil {
		return Image{}, err
	}
	// A verify block present in any form, "verify: null" included, asks
	// for verification: when in doubt, refuse rather than serve unverified.
	img := Image{Ref: ie.Image, PullPolicy: ie.PullPolicy, Verify: ie.Verify}
	if len(ie.Policy) > 0 && string(ie.Policy) != "null" {
		p, err := runtime.ParsePolicy(ie.Policy)
		if err != nil {
			return Image{}, err
		}
		img.Policy = &p
	}
	img, _, err = checkImage(img)
	return img, err
}

// checkImage validates img's reference and pull policy and fills in the
// default policy: PullIfNotPresent for a digest, PullAlways for a tag.
func checkImage(img Image) (Image, orasreg.Reference, error) {
	if img.Ref == "" {
		return img, orasreg.Reference{}, errors.New("image: required (registry/repository:tag or registry/repository@sha256:…)")
	}
	ref, err := orasreg.ParseReference(img.Ref)
	if err != nil {
		return img, ref, fmt.Errorf("image: %q: %w", img.Ref, err)
	}
	if ref.Reference == "" {
		return img, ref, fmt.Errorf("image: %q names neither a tag nor a digest", img.Ref)
	}
	_, derr := ref.Digest()
	switch img.PullPolicy {
	case "":
		img.PullPolicy = PullAlways
		if derr == nil {
			img.PullPolicy = PullIfNotPresent
		}
	case PullAlways, PullIfNotPresent:
	default:
		return img, ref, fmt.Errorf("pullPolicy: %q is neither %s nor %s", img.PullPolicy, PullIfNotPresent, PullAlways)
	}
	return img, ref, nil
}

// imageEntryPath returns the path of name's image entry in dir and whether
// it exists. "<name>.provider.yaml" next to a "<name>.provider.wasm" is
// that module's policy file, not an image entry: the file layout keeps
// its meaning.
func imageEntryPath(dir, name string) (string, bool) {
	p := filepath.Join(dir, name+ImageEntrySuffix)
	if _, err := os.Stat(p); err != nil {
		return p, false
	}
	if _, err := os.Stat(filepath.Join(dir, name+".provider.wasm")); err == nil {
		return p, false
	}
	return p, true
}

// verifiedKey names a verification result: the repository, the manifest
// digest and the verify block. A result is valid forever for the same
// content digest under the same policy (the digest fixes every byte that
// was checked, and the block every rule it was checked against), so it is
// remembered rather than asked again. The repository is part of the key
// because a signature policy may bind the repository the artifact is
// named in, not just its content.
func verifiedKey(pinned orasreg.Reference, verify []byte) string {
	vs := sha256.Sum256(verify)
	return pinned.String() + "/" + hex.EncodeToString(vs[:])
}

// pullImage is the one path from an Image to a version, for image
// entries and RegisterImage alike: it resolves the reference (a digest
// needs no resolving; a tag with PullIfNotPresent keeps the digest it
// resolved to while the image is unchanged), pulls the artifact through
// the OCI client (a digest the store holds needs no network), verifies it
// if asked (an artifact verified before under the same block is not
// verified again), and returns the module and policy for the same prepare
// and swap as a file. Its refusals are *VersionError.
func (r *Registry) pullImage(ctx context.Context, e *entry, img Image, entryPath string) ([]byte, *runtime.Policy, contentKey, imageInfo, error) {
	verr := &VersionError{Provider: e.name, Ref: img.Ref}
	var stale *staleInfo
	fail := func(stage Stage, err error) ([]byte, *runtime.Policy, contentKey, imageInfo, error) {
		verr.Stage, verr.Err = stage, err
		return nil, nil, contentKey{}, imageInfo{}, verr
	}
	img, ref, err := checkImage(img)
	if err != nil {
		return fail(StagePull, fmt.Errorf("%w: %w: %w", ErrPull, ErrInvalidImage, err))
	}
	// Any Verify, even empty, asks for verification (fail closed).
	if img.Verify != nil && r.cfg.verifier == nil {
		return fail(StageVerify, ErrNoVerifier)
	}
	if img.Verify != nil && r.cfg.verifyCheck != nil {
		if err := r.cfg.verifyCheck(img.Verify, entryPath); err != nil {
			return fail(StageVerify, fmt.Errorf("%w: verify: %w", ErrInvalidImage, err))
		}
	}
	c := img.Client
	if c == nil {
		c = r.cfg.oci
	}
	if c == nil {
		return fail(StagePull, fmt.Errorf("%w: %w", ErrPull, ErrNoOCIClient))
	}
	d, err := ref.Digest()
	switch {
	case err == nil:
	case img.PullPolicy == PullIfNotPresent && e.img.ref == img.Ref && e.img.digest != "":
		d = e.img.digest // resolved before: keep it until the image changes
	default:
		rctx, cancel := context.WithTimeout(ctx, r.cfg.imagePullTimeout)
		start := time.Now()
		d, err = c.Resolve(rctx, img.Ref)
		cancel()
		e.st.countPull(err, time.Since(start))
		if err != nil {
			err = fmt.Errorf("%w: resolving the image: %w", ErrPull, err)
			last, ok := c.LastResolved(img.Ref)
			if e.cur.Load() != nil || !ok {
				// Serving: the version serving is the last known good.
				return fail(StagePull, err)
			}
			// Nothing serving (a start during an outage): the digest the
			// tag last resolved to, from the store, checked like any.
			stale = &staleInfo{reason: err.Error(), since: last.At}
			d = last.Digest
		}
	}
	if stale == nil {
		e.img.resolvedAt = time.Now()
	}
	verr.Digest = d.String()
	pinned := ref
	pinned.Reference = d.String()
	if c.Store() != nil {
		r.pinImages(e, c.Store(), d)
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.imagePullTimeout)
	start := time.Now()
	a, err := c.Pull(pctx, pinned.String())
	cancel()
	e.st.countPull(err, time.Since(start))
	if err != nil {
		return fail(StagePull, fmt.Errorf("%w: pulling the image: %w", ErrPull, err))
	}
	modSum := sha256.Sum256(a.Wasm)
	verr.ModuleSHA256 = hex.EncodeToString(modSum[:])
	if img.Verify != nil {
		vkey := verifiedKey(pinned, img.Verify)
		i := slices.IndexFunc(e.img.verified, func(v verifiedArtifact) bool { return v.key == vkey })
		if i < 0 {
			start := time.Now()
			err := r.cfg.verifier(ctx, VerifyRequest{Provider: e.name, Ref: img.Ref, Digest: d.String(), Verify: img.Verify, Client: c, Entry: entryPath})
			e.st.countVerify(err, time.Since(start))
			if err != nil {
				return fail(StageVerify, fmt.Errorf("%w: %w", ErrVerification, err))
			}
		} else {
			e.img.verified = slices.Delete(e.img.verified, i, i+1)
		}
		// Most recent first; the oldest beyond maxVerified is forgotten.
		e.img.verified = slices.Insert(e.img.verified, 0, verifiedArtifact{key: vkey, digest: d})
		if len(e.img.verified) > maxVerified {
			e.img.verified = e.img.verified[:maxVerified]
		}
	}
	e.img.ref, e.img.digest = img.Ref, d
	// The version is the module and the policy it runs under; the
	// reference is not part of it (a tag moved to the same module is no
	// reload).
	key := contentKey{module: modSum, policy: sha256.Sum256(policyBytes(img.Policy))}
	return a.Wasm, img.Policy, key, imageInfo{ref: img.Ref, pinned: pinned.String(), digest: d.String(), store: c.Store(), stale: stale}, nil
}

// pinImages pins, in store (the store of the client that pulled e's
// latest artifact), the manifest serving, those e verified and extra (an
// artifact about to be pulled: the pull's own GC must not drop it before
// it serves), so the store's GC keeps what a rollback needs offline.
// store nil drops e's pins. e.loadMu is held.
func (r *Registry) pinImages(e *entry, store *oci.Store, extra ...digest.Digest) {
	owner := r.pinOwner + "/" + e.name
	if e.img.pinStore != nil && e.img.pinStore != store {
		e.img.pinStore.Pin(owner)
	}
	e.img.pinStore = store
	if store == nil {
		return
	}
	ds := slices.Clone(extra)
	if e.img.serving != "" {
		ds = append(ds, e.img.serving)
	}
	for _, v := range e.img.verified {
		ds = append(ds, v.digest)
	}
	store.Pin(owner, ds...)
}

// pollImages re-reads every image entry of the watched directories every
// WithImagePollInterval until the watch ends: a tag with PullAlways is
// resolved again, and an entry whose last pull failed is tried again.
// Unchanged content is a no-op (sync compares content keys).
func (wt *watcher) pollImages(t clock.Ticker) {
	r := wt.r
	defer r.wg.Done()
	defer t.Stop()
	for {
		select {
		case <-wt.ctx.Done():
			return
		case <-t.C():
		}
		r.mu.Lock()
		var es []*entry
		for _, e := range r.entries {
			if e.src.kind == fromDir && e.isImage.Load() {
				es = append(es, e)
			}
		}
		r.mu.Unlock()
		for _, e := range es {
			if wt.ctx.Err() != nil {
				return
			}
			if r.cfg.clock.Now().UnixNano() < e.retryAt.Load() {
				continue
			}
			_ = r.sync(wt.ctx, e) // it backs off (backOff) as it reports
		}
	}
}

// maxBackoff bounds how many poll intervals a failing image entry waits.
const maxBackoff = 8

// backOff spaces the polls of an image entry whose pull or verification
// keeps failing (the registry is down, the tag names an unsigned
// digest): after n such failures in a row it is tried again after
// min(2^(n-1), maxBackoff) poll intervals, so that an outage costs the
// registry (and the log) little; the first success resets it. A version
// refused after its pull (load, smoke call) needs no backing off: the
// same content is not tried again anyway. sync calls it before it
// reports the outcome (an event), so that whoever saw the event and then
// moves the clock sees the back-off it set. e.loadMu is held.
func (r *Registry) backOff(e *entry, err error) {
	ve, ok := errors.AsType[*VersionError](err)
	if err == nil || !ok || (ve.Stage != StagePull && ve.Stage != StageVerify) {
		e.failures.Store(0)
		e.retryAt.Store(0)
		return
	}
	n := e.failures.Add(1)
	wait := time.Duration(min(int64(1)<<min(n-1, 3), maxBackoff)) * r.cfg.imagePoll
	// Half an interval early: the poll that is due then must not miss it
	// by the time it took to get there.
	e.retryAt.Store(r.cfg.clock.Now().Add(wait - r.cfg.imagePoll/2).UnixNano())
}

// sourceOf describes where e's versions come from, for events and Status.
// e may be nil (a name refused before it had an entry).
func sourceOf(e *entry, name string, src source) string {
	if src.kind == fromDir && e != nil && e.isImage.Load() {
		return filepath.Join(src.dir, name+ImageEntrySuffix)
	}
	return src.String(name)
}
