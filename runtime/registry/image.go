package registry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/wasmprov/wasmprov/runtime"
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
	// ErrNoOCIClient: an image entry was found but the registry has no OCI
	// client (WithOCIClient).
	ErrNoOCIClient = errors.New("image entries need an OCI client (registry.WithOCIClient)")
)

// Verifier checks the artifact an image entry resolved to before it may
// load: name is the provider, ref the entry's image as written, digest the
// manifest digest it resolved to ("sha256:…"), verifyDoc the entry's
// verify block as JSON. An error refuses the version; the previous one
// keeps serving.
type Verifier func(ctx context.Context, name, ref, digest string, verifyDoc json.RawMessage) error

// imageEntry is the content of a "<name>.provider.yaml".
type imageEntry struct {
	Image      string          `json:"image"`
	PullPolicy PullPolicy      `json:"pullPolicy,omitempty"`
	Policy     json.RawMessage `json:"policy,omitempty"`
	Verify     json.RawMessage `json:"verify,omitempty"`
}

// imageState is what an entry remembers of its image between reads.
// Guarded by the entry's loadMu.
type imageState struct {
	ref         string        // the entry's image when last resolved
	digest      digest.Digest // what it resolved to
	verifiedKey string        // digest + verify block last verified
}

// imageInfo says which artifact a version came from; zero for files.
type imageInfo struct {
	ref    string // the entry's image as written
	pinned string // repository@digest
	digest string
}

// parseImageEntry decodes an image entry strictly, like a policy file:
// unknown fields and duplicate keys are errors.
func parseImageEntry(b []byte) (imageEntry, *runtime.Policy, orasreg.Reference, error) {
	var ie imageEntry
	var ref orasreg.Reference
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return ie, nil, ref, err
	}
	strict, err := sigsjson.UnmarshalStrict(j, &ie, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return ie, nil, ref, err
	}
	if err := errors.Join(strict...); err != nil {
		return ie, nil, ref, err
	}
	if ie.Image == "" {
		return ie, nil, ref, errors.New("image: required (registry/repository:tag or registry/repository@sha256:…)")
	}
	ref, err = orasreg.ParseReference(ie.Image)
	if err != nil {
		return ie, nil, ref, fmt.Errorf("image: %w", err)
	}
	if ref.Reference == "" {
		return ie, nil, ref, fmt.Errorf("image: %q names neither a tag nor a digest", ie.Image)
	}
	_, derr := ref.Digest()
	switch ie.PullPolicy {
	case "":
		ie.PullPolicy = PullAlways
		if derr == nil {
			ie.PullPolicy = PullIfNotPresent
		}
	case PullAlways, PullIfNotPresent:
	default:
		return ie, nil, ref, fmt.Errorf("pullPolicy: %q is neither %s nor %s", ie.PullPolicy, PullIfNotPresent, PullAlways)
	}
	var policy *runtime.Policy
	if len(ie.Policy) > 0 && string(ie.Policy) != "null" {
		p, err := runtime.ParsePolicy(ie.Policy)
		if err != nil {
			return ie, nil, ref, err
		}
		policy = &p
	}
	return ie, policy, ref, nil
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

// readImage reads the image entry b (at path) of e: it resolves and
// pulls the artifact through the OCI client (a digest the store holds
// needs no network), verifies it if asked, and returns the module and
// policy for the same prepare and swap as a file.
func (r *Registry) readImage(ctx context.Context, e *entry, path string, b []byte) ([]byte, *runtime.Policy, contentKey, imageInfo, error) {
	fail := func(err error) ([]byte, *runtime.Policy, contentKey, imageInfo, error) {
		return nil, nil, contentKey{}, imageInfo{}, err
	}
	ie, policy, ref, err := parseImageEntry(b)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if len(ie.Verify) > 0 && r.cfg.verifier == nil {
		return fail(fmt.Errorf("%s: %w", path, ErrNoVerifier))
	}
	if r.cfg.oci == nil {
		return fail(fmt.Errorf("%s: %w", path, ErrNoOCIClient))
	}
	d, err := ref.Digest()
	switch {
	case err == nil:
	case ie.PullPolicy == PullIfNotPresent && e.img.ref == ie.Image && e.img.digest != "":
		d = e.img.digest // resolved before: keep it until the entry changes
	default:
		rctx, cancel := context.WithTimeout(ctx, r.cfg.imagePullTimeout)
		d, err = r.cfg.oci.Resolve(rctx, ie.Image)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("resolving the image of provider %q: %w", e.name, err))
		}
	}
	pinned := ref
	pinned.Reference = d.String()
	pctx, cancel := context.WithTimeout(ctx, r.cfg.imagePullTimeout)
	a, err := r.cfg.oci.Pull(pctx, pinned.String())
	cancel()
	if err != nil {
		return fail(fmt.Errorf("pulling the image of provider %q: %w", e.name, err))
	}
	if len(ie.Verify) > 0 {
		vs := sha256.Sum256(ie.Verify)
		vkey := d.String() + "/" + fmt.Sprintf("%x", vs)
		if e.img.verifiedKey != vkey {
			if err := r.cfg.verifier(ctx, e.name, ie.Image, d.String(), ie.Verify); err != nil {
				return fail(fmt.Errorf("provider %q, %s: %w: %w", e.name, pinned.String(), ErrVerification, err))
			}
			e.img.verifiedKey = vkey
		}
	}
	e.img.ref, e.img.digest = ie.Image, d
	// The version is the module and the policy it runs under; the
	// reference is not part of it (a tag moved to the same module is no
	// reload).
	var polBytes []byte
	if policy != nil {
		polBytes = ie.Policy
	}
	key := contentKey{module: sha256.Sum256(a.Wasm), policy: sha256.Sum256(polBytes)}
	return a.Wasm, policy, key, imageInfo{ref: ie.Image, pinned: pinned.String(), digest: d.String()}, nil
}

// pollImages re-reads every image entry of the watched directories every
// WithImagePollInterval until the watch ends: a tag with PullAlways is
// resolved again, and an entry whose last pull failed is tried again.
// Unchanged content is a no-op (sync compares content keys).
func (wt *watcher) pollImages() {
	r := wt.r
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.imagePoll)
	defer t.Stop()
	for {
		select {
		case <-wt.ctx.Done():
			return
		case <-t.C:
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
			_ = r.sync(wt.ctx, e)
		}
	}
}

// sourceOf describes where e's versions come from, for events and Status.
// e may be nil (a name refused before it had an entry).
func sourceOf(e *entry, name string, src source) string {
	if src.kind == fromDir && e != nil && e.isImage.Load() {
		return filepath.Join(src.dir, name+ImageEntrySuffix)
	}
	return src.String(name)
}
