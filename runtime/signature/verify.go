package signature

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

// Errors Verify wraps.
var (
	// ErrUnsigned: no Sigstore bundle is attached to the artifact.
	ErrUnsigned = errors.New("not signed")
	// ErrPolicy: there are bundles, but not the ones the policy wants.
	ErrPolicy = errors.New("signature policy not satisfied")
)

// Result says how a policy was satisfied.
type Result struct {
	// Digest is the manifest digest verified.
	Digest digest.Digest
	// Matched names the rules that matched ("key sha256:…", "identity
	// issuer=… subject=…"), anyOf's first.
	Matched []string
	// Bundles is how many bundles were attached.
	Bundles int
	// Source says where the bundles came from: SourceRegistry, or
	// SourceStore when the local store's satisfied the policy and the
	// registry was not asked.
	Source string
	// FirstVerified is when this policy (by ID) first accepted this
	// digest with this store, as its verification record says; zero if
	// there is none.
	FirstVerified time.Time
}

// Where a Result's bundles came from.
const (
	SourceRegistry = "registry"
	SourceStore    = "store"
)

// String is the result in one line, for logs and the CLI.
func (r *Result) String() string {
	return fmt.Sprintf("%s: %s (%d bundle(s), from the %s)", r.Digest, strings.Join(r.Matched, ", "), r.Bundles, r.Source)
}

// Verify checks the Sigstore bundles attached to the artifact ref names
// against p. For a reference pinned by digest it first checks the bundles
// the client's store holds (an earlier verification kept them, or Load
// brought them) and makes no request if they satisfy p: a provider
// verified once keeps verifying through a registry outage, a restart and
// an air gap. Only when they do not does it fetch the referrers (referrers
// API or tag schema), which the store then keeps.
//
// The stored bundles are verified in full every time, against p as it is
// now — signatures, certificate chains, transparency-log proofs, all
// offline, as sigstore-go checks a bundle — so a rotated key or trusted
// root refuses them as it would refuse the registry's. What is recorded
// (see record) only says what was verified when; it is never a reason to
// accept.
func Verify(ctx context.Context, c *oci.Client, ref string, p *Policy) (*Result, error) {
	if err := p.compiled(); err != nil {
		return nil, err
	}
	var storeErr error
	if d, pinned := oci.PinnedDigest(ref); pinned && c.Store() != nil {
		res, err := verifyStored(c, ref, d, p)
		if err == nil {
			return res, nil
		}
		storeErr = err
	}
	refs, d, err := c.Referrers(ctx, ref, BundleMediaType)
	if err != nil {
		if storeErr != nil {
			return nil, fmt.Errorf("%w (and offline: %w)", err, storeErr)
		}
		return nil, err
	}
	bundles := make([][]byte, 0, len(refs))
	for _, r := range refs {
		if r.MediaType == BundleMediaType {
			bundles = append(bundles, r.Data)
		}
	}
	res, err := p.VerifyBundles(d, bundles)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	res.Source = SourceRegistry
	record(c.Store(), ref, p, res)
	return res, nil
}

// errNoStored: the store holds no bundle for the digest.
var errNoStored = errors.New("the local store holds no signature of it (load a bundle saved with its signatures, or reach the registry once)")

// verifyStored verifies the bundles the store holds for ref, pinned to d.
func verifyStored(c *oci.Client, ref string, d digest.Digest, p *Policy) (*Result, error) {
	refs, damaged := c.StoredReferrers(ref, BundleMediaType)
	var bundles [][]byte
	for _, r := range refs {
		if r.MediaType == BundleMediaType {
			bundles = append(bundles, r.Data)
		}
	}
	if len(bundles) == 0 {
		if damaged != nil {
			return nil, damaged
		}
		return nil, errNoStored
	}
	res, err := p.VerifyBundles(d, bundles)
	if err != nil {
		return nil, errors.Join(err, damaged)
	}
	res.Source = SourceStore
	record(c.Store(), ref, p, res)
	return res, nil
}

// verification is the record of a verification, the note
// "verified-<policy ID>" of the manifest in the store.
type verification struct {
	Policy        string    `json:"policy"`
	Repository    string    `json:"repository"`
	Matched       []string  `json:"matched"`
	FirstVerified time.Time `json:"firstVerified"`
}

// noteName names the record of p's verifications in repository.
func noteName(p *Policy, repository string) string {
	sum := sha256.Sum256([]byte(p.ID() + "\n" + repository))
	return "verified-" + hex.EncodeToString(sum[:])
}

// record notes, in store, that p accepted res.Digest in the repository
// of ref, keeping the time it first did and filling res.FirstVerified. A
// store that cannot keep it loses only the record.
func record(store *oci.Store, ref string, p *Policy, res *Result) {
	repo, err := oci.RepositoryOf(ref)
	if store == nil || err != nil {
		return
	}
	name := noteName(p, repo)
	var v verification
	if b, ok := store.Note(res.Digest, name); ok && json.Unmarshal(b, &v) == nil && v.Policy == p.ID() && v.Repository == repo && !v.FirstVerified.IsZero() {
		res.FirstVerified = v.FirstVerified
		return
	}
	v = verification{Policy: p.ID(), Repository: repo, Matched: res.Matched, FirstVerified: time.Now().UTC()}
	if b, err := json.Marshal(v); err == nil && store.PutNote(res.Digest, name, b) == nil {
		res.FirstVerified = v.FirstVerified
	}
}

// compiled compiles p if it was built in Go and not compiled yet.
func (p *Policy) compiled() error {
	if p.parsed {
		return nil
	}
	return p.Compile()
}

// Hook returns an oci.Options.Verify that lets Pull return only
// artifacts satisfying p.
func (p *Policy) Hook() func(ctx context.Context, c *oci.Client, a *oci.Artifact) error {
	return func(ctx context.Context, c *oci.Client, a *oci.Artifact) error {
		_, err := Verify(ctx, c, a.Ref, p)
		return err
	}
}

// VerifyBundles checks bundles (Sigstore bundle JSON) claimed for the
// manifest digest d against p, without a registry.
func (p *Policy) VerifyBundles(d digest.Digest, bundles [][]byte) (*Result, error) {
	if err := p.compiled(); err != nil {
		return nil, err
	}
	if d.Algorithm() != digest.SHA256 || d.Validate() != nil {
		return nil, fmt.Errorf("%w: %q is not a sha256 digest", ErrPolicy, d)
	}
	raw, _ := hex.DecodeString(d.Encoded())
	if len(bundles) == 0 {
		return nil, fmt.Errorf("%w: no Sigstore bundle (%s) is attached to %s", ErrUnsigned, BundleMediaType, d)
	}
	var (
		entities []verify.SignedEntity
		bad      []string
	)
	for i, b := range bundles {
		e, err := parseBundle(b)
		if err != nil {
			bad = append(bad, fmt.Sprintf("bundle %d: %v", i+1, err))
			entities = append(entities, nil)
			continue
		}
		entities = append(entities, e)
	}
	return p.check(d, raw, entities, bad)
}

// parseBundle decodes and validates one bundle.
func parseBundle(b []byte) (*bundle.Bundle, error) {
	var bb bundle.Bundle
	if err := bb.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	return &bb, nil
}

// check evaluates the rules over the entities (nil for one that did not
// parse; bad says why).
func (p *Policy) check(d digest.Digest, raw []byte, entities []verify.SignedEntity, bad []string) (*Result, error) {
	res := &Result{Digest: d, Bundles: len(entities)}
	var failures []string
	if len(p.AnyOf) > 0 {
		need := max(p.MinMatches, 1)
		var matched, why []string
		for i := range p.AnyOf {
			if err := p.AnyOf[i].match(entities, raw); err != nil {
				why = append(why, fmt.Sprintf("%s: %v", &p.AnyOf[i], err))
			} else {
				matched = append(matched, p.AnyOf[i].String())
			}
		}
		if len(matched) < need {
			failures = append(failures, fmt.Sprintf("anyOf: %d of %d matched (need %d): %s", len(matched), len(p.AnyOf), need, strings.Join(why, "; ")))
		}
		res.Matched = append(res.Matched, matched...)
	}
	if len(p.AllOf) > 0 {
		var why []string
		n := 0
		for i := range p.AllOf {
			if err := p.AllOf[i].match(entities, raw); err != nil {
				why = append(why, fmt.Sprintf("%s: %v", &p.AllOf[i], err))
			} else {
				n++
				res.Matched = append(res.Matched, p.AllOf[i].String())
			}
		}
		if len(why) > 0 {
			failures = append(failures, fmt.Sprintf("allOf: %d of %d matched: %s", n, len(p.AllOf), strings.Join(why, "; ")))
		}
	}
	if len(failures) > 0 {
		if len(bad) > 0 {
			failures = append(failures, strings.Join(bad, "; "))
		}
		return nil, fmt.Errorf("%w for %s: %s", ErrPolicy, d, strings.Join(failures, "; "))
	}
	return res, nil
}

// match says whether one of the entities verifies under r for the digest
// raw, and if none does, why not, bundle by bundle.
func (r *Rule) match(entities []verify.SignedEntity, raw []byte) error {
	var why []string
	for i, e := range entities {
		if e == nil {
			continue
		}
		err := r.verifyOne(e, raw)
		if err == nil {
			return nil
		}
		why = append(why, fmt.Sprintf("bundle %d: %v", i+1, err))
	}
	if len(why) == 0 {
		return errors.New("no bundle that parses")
	}
	return errors.New(strings.Join(why, ", "))
}

// verifyOne verifies one entity under r.
func (r *Rule) verifyOne(e verify.SignedEntity, raw []byte) error {
	vc, err := e.VerificationContent()
	if err != nil {
		return err
	}
	sc, err := e.SignatureContent()
	if err != nil {
		return err
	}
	// Say plainly what sigstore-go would say obscurely.
	if ms := sc.MessageSignatureContent(); ms != nil {
		if !strings.EqualFold(ms.DigestAlgorithm(), "sha256") && ms.DigestAlgorithm() != protocommon.HashAlgorithm_SHA2_256.String() {
			return fmt.Errorf("signs a %s digest, not sha256", ms.DigestAlgorithm())
		}
		if hex.EncodeToString(ms.Digest()) != hex.EncodeToString(raw) {
			return fmt.Errorf("it is a signature of another digest, sha256:%x", ms.Digest())
		}
	}
	var policy verify.PolicyBuilder
	if r.Keyless != nil {
		if vc.Certificate() == nil {
			return errors.New("signed with a key, not a certificate")
		}
		policy = verify.NewPolicy(verify.WithArtifactDigest("sha256", raw), verify.WithCertificateIdentity(*r.ident))
	} else {
		if vc.Certificate() != nil {
			return errors.New("signed with a certificate, not a key")
		}
		policy = verify.NewPolicy(verify.WithArtifactDigest("sha256", raw), verify.WithKey())
	}
	if _, err := r.verifier.Verify(e, policy); err != nil {
		if r.Keyless == nil {
			return fmt.Errorf("signature invalid for this key (the bundle names key %s): %w", hintOf(vc), err)
		}
		// sigstore-go's words for a chain or validity failure.
		if strings.Contains(err.Error(), "leaf certificate") {
			return fmt.Errorf("%s: %w", r.diagnose(vc.Certificate()), err)
		}
		return err
	}
	return nil
}

// diagnose says why a certificate sigstore-go refused was refused, when
// it is the certificate: not from a CA of the trusted root, or not valid
// at the bundle's trusted time (sigstore-go says only "leaf certificate
// verification failed" for both).
func (r *Rule) diagnose(cert *x509.Certificate) string {
	for _, a := range r.root.FulcioCertificateAuthorities() {
		f, ok := a.(*root.FulcioCertificateAuthority)
		if !ok || f.Root == nil {
			continue
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(f.Root)
		for _, c := range f.Intermediates {
			inter.AddCert(c)
		}
		// At the certificate's own start, so that validity is no reason.
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
			CurrentTime: cert.NotBefore, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})
		if err == nil {
			return fmt.Sprintf("certificate expired or not yet valid at the bundle's timestamp (valid %s to %s)",
				cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return fmt.Sprintf("certificate (issuer %q) not issued by a CA of the trusted root", cert.Issuer.String())
}

// hintOf is the key hint a bundle claims, for messages.
func hintOf(vc verify.VerificationContent) string {
	if pk := vc.PublicKey(); pk != nil {
		if h := pk.Hint(); h != "" {
			return shortID(h)
		}
	}
	return "(none)"
}
