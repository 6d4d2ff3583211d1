package signature

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Policy says which signatures a module must carry. It is the
// "signatures" part of a provider's policy document, YAML or JSON,
// decoded strictly (an unknown or misspelt field is an error):
//
//	anyOf:                 # at least minMatches of these
//	  - publicKey: |
//	      -----BEGIN PUBLIC KEY-----
//	      ...
//	  - keyless:
//	      issuer: https://token.actions.githubusercontent.com
//	      subjectPrefix: https://github.com/acme/providers/
//	minMatches: 1
//	allOf:                 # every one of these
//	  - publicKeyFile: release.pub
//	trustedRoot: trusted_root.json   # for keyless rules
//
// A policy with both lists needs both to hold. A rule matches when one of
// the bundles attached to the artifact verifies under it.
type Policy struct {
	AnyOf []Rule `json:"anyOf,omitempty"`
	AllOf []Rule `json:"allOf,omitempty"`
	// MinMatches is how many anyOf rules must match; 0 means 1.
	MinMatches int `json:"minMatches,omitempty"`
	// TrustedRoot is a Sigstore trusted_root.json (Fulcio CAs, timestamp
	// authorities, Rekor and CT logs) for keyless rules; a relative path
	// is relative to the policy file. Required by keyless rules: the
	// public-good root can be had with `cosign trusted-root create` or
	// from Sigstore's TUF repository; it is not fetched here.
	TrustedRoot string `json:"trustedRoot,omitempty"`
	// TransparencyLogEntries and CertificateTimestamps are how many
	// verified Rekor entries and embedded SCTs a keyless bundle must have
	// (0: none needed). Public-good Sigstore bundles have one of each: set
	// both to 1 for them.
	TransparencyLogEntries int `json:"transparencyLogEntries,omitempty"`
	CertificateTimestamps  int `json:"certificateTimestamps,omitempty"`

	dir        string
	root       root.TrustedMaterial
	rootSHA256 string
	id         string
	parsed     bool
}

// Rule is one accepted signer: a public key or a keyless identity.
type Rule struct {
	// PublicKey is a PEM public key (PKIX); PublicKeyFile a file holding
	// one, relative to the policy file.
	PublicKey     string `json:"publicKey,omitempty"`
	PublicKeyFile string `json:"publicKeyFile,omitempty"`
	// Keyless is a certificate identity from a Fulcio of the trusted root.
	Keyless *Identity `json:"keyless,omitempty"`

	keyID    string
	ident    *verify.CertificateIdentity
	verifier *verify.Verifier
	root     root.TrustedMaterial // keyless rules
}

// Identity is an OIDC issuer and subject (the certificate's SAN: an
// e-mail, a workflow URI), each exact or by prefix.
type Identity struct {
	Issuer        string `json:"issuer,omitempty"`
	IssuerPrefix  string `json:"issuerPrefix,omitempty"`
	Subject       string `json:"subject,omitempty"`
	SubjectPrefix string `json:"subjectPrefix,omitempty"`
}

// ParsePolicy decodes a policy strictly and checks it; dir is where
// relative file names are relative to.
func ParsePolicy(b []byte, dir string) (*Policy, error) {
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, fmt.Errorf("signature policy: %w", err)
	}
	if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
		return nil, errors.New("signature policy: empty: name at least one rule in anyOf or allOf")
	}
	p := &Policy{}
	strict, err := sigsjson.UnmarshalStrict(j, p, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("signature policy: %w", err)
	}
	p.dir = dir
	if err := p.Compile(); err != nil {
		return nil, err
	}
	return p, nil
}

// ParsePolicyFile reads and parses a policy file.
func ParsePolicyFile(file string) (*Policy, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p, err := ParsePolicy(b, filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Compile checks p and reads the keys and the trusted root it names. A
// Policy built in Go (not parsed) must be compiled before use; Verify
// compiles it if needed.
func (p *Policy) Compile() error {
	if len(p.AnyOf) == 0 && len(p.AllOf) == 0 {
		return errors.New("signature policy: name at least one rule in anyOf or allOf")
	}
	if p.MinMatches < 0 || p.MinMatches > len(p.AnyOf) {
		return fmt.Errorf("signature policy: minMatches %d, but anyOf has %d rules", p.MinMatches, len(p.AnyOf))
	}
	if p.TransparencyLogEntries < 0 || p.CertificateTimestamps < 0 {
		return errors.New("signature policy: transparencyLogEntries and certificateTimestamps must not be negative")
	}
	keyless := false
	for _, list := range []struct {
		name  string
		rules []Rule
	}{{"anyOf", p.AnyOf}, {"allOf", p.AllOf}} {
		for i := range list.rules {
			r := &list.rules[i]
			if err := r.compile(p.dir); err != nil {
				return fmt.Errorf("signature policy: %s[%d]: %w", list.name, i, err)
			}
			keyless = keyless || r.Keyless != nil
		}
	}
	if keyless {
		if p.TrustedRoot == "" {
			return errors.New("signature policy: keyless rules need trustedRoot (a Sigstore trusted_root.json)")
		}
		rootJSON, err := os.ReadFile(p.path(p.TrustedRoot))
		if err != nil {
			return fmt.Errorf("signature policy: trustedRoot: %w", err)
		}
		tr, err := root.NewTrustedRootFromJSON(rootJSON)
		if err != nil {
			return fmt.Errorf("signature policy: trustedRoot %s: %w", p.TrustedRoot, err)
		}
		p.root = tr
		sum := sha256.Sum256(rootJSON)
		p.rootSHA256 = hex.EncodeToString(sum[:])
		// A certificate lives minutes: it must have been valid at a
		// trusted time (a TSA's timestamp or a log's integrated time),
		// never merely now.
		opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
		if p.TransparencyLogEntries > 0 {
			opts = append(opts, verify.WithTransparencyLog(p.TransparencyLogEntries))
		}
		if p.CertificateTimestamps > 0 {
			opts = append(opts, verify.WithSignedCertificateTimestamps(p.CertificateTimestamps))
		}
		v, err := verify.NewVerifier(tr, opts...)
		if err != nil {
			return fmt.Errorf("signature policy: %w", err)
		}
		for _, rules := range [][]Rule{p.AnyOf, p.AllOf} {
			for i := range rules {
				if rules[i].Keyless != nil {
					rules[i].verifier, rules[i].root = v, tr
				}
			}
		}
	}
	p.id = p.identity()
	p.parsed = true
	return nil
}

// identity is what the policy accepts, as a digest: the rules by what
// they check (a key's digest, not the file it came from; an identity),
// the counts, and the trusted root's content. Two policies with one
// identity accept the same bundles; a rotated key or root is another
// identity, so a verification recorded under the old one is not found.
func (p *Policy) identity() string {
	rules := func(rs []Rule) []string {
		out := make([]string, len(rs))
		for i := range rs {
			if rs[i].Keyless != nil {
				out[i] = rs[i].String()
			} else {
				out[i] = "key " + rs[i].keyID
			}
		}
		return out
	}
	b, _ := json.Marshal(struct {
		AnyOf, AllOf          []string
		MinMatches, TLog, SCT int
		TrustedRoot           string
	}{rules(p.AnyOf), rules(p.AllOf), max(p.MinMatches, 1), p.TransparencyLogEntries, p.CertificateTimestamps, p.rootSHA256})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ID identifies what the policy accepts (see identity); it is set by
// Compile.
func (p *Policy) ID() string { return p.id }

func (p *Policy) path(f string) string {
	if filepath.IsAbs(f) || p.dir == "" {
		return f
	}
	return filepath.Join(p.dir, f)
}

func (r *Rule) compile(dir string) error {
	n := 0
	for _, set := range []bool{r.PublicKey != "", r.PublicKeyFile != "", r.Keyless != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("a rule is exactly one of publicKey, publicKeyFile, keyless")
	}
	if r.Keyless != nil {
		id := r.Keyless
		if (id.Issuer == "") == (id.IssuerPrefix == "") || (id.Subject == "") == (id.SubjectPrefix == "") {
			return errors.New("keyless: name the issuer (issuer or issuerPrefix) and the subject (subject or subjectPrefix), one way each")
		}
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, prefixRegexp(id.IssuerPrefix), id.Subject, prefixRegexp(id.SubjectPrefix))
		if err != nil {
			return fmt.Errorf("keyless: %w", err)
		}
		r.ident = &ci
		return nil
	}
	pemText := []byte(r.PublicKey)
	if r.PublicKeyFile != "" {
		f := r.PublicKeyFile
		if !filepath.IsAbs(f) && dir != "" {
			f = filepath.Join(dir, f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pemText = b
	}
	blk, _ := pem.Decode(pemText)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return errors.New("publicKey: not a PEM PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return fmt.Errorf("publicKey: %w", err)
	}
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return fmt.Errorf("publicKey: a %T; only ECDSA keys (what wasmprov keygen and cosign write) are accepted", k)
	}
	r.keyID, err = keyID(ec)
	if err != nil {
		return err
	}
	v, err := sigsig.LoadECDSAVerifier(ec, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("publicKey: %w", err)
	}
	// The bundle's hint is the signer's claim, not trusted: whatever it
	// says, the signature is checked against this key.
	material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(v, time.Time{}, time.Time{}), nil
	})
	// A key has no validity period to check a time against: no timestamp.
	r.verifier, err = verify.NewVerifier(material, verify.WithNoObserverTimestamps())
	return err
}

// prefixRegexp matches what starts with prefix ("" for none).
func prefixRegexp(prefix string) string {
	if prefix == "" {
		return ""
	}
	return "^" + regexp.QuoteMeta(prefix)
}

// String names the rule in results and errors.
func (r *Rule) String() string {
	if r.Keyless != nil {
		id := r.Keyless
		iss, sub := "issuer="+id.Issuer, "subject="+id.Subject
		if id.IssuerPrefix != "" {
			iss = "issuerPrefix=" + id.IssuerPrefix
		}
		if id.SubjectPrefix != "" {
			sub = "subjectPrefix=" + id.SubjectPrefix
		}
		return "identity " + iss + " " + sub
	}
	return "key " + shortID(r.keyID)
}
