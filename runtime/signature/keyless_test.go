package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"
)

// pki is an offline keyless Sigstore: a Fulcio-like CA made here (its
// intermediate key kept, to issue leaves of any validity) and the
// timestamp authority of sigstore-go's VirtualSigstore, written out as a
// trusted_root.json.
type pki struct {
	vs                *ca.VirtualSigstore
	inter             *x509.Certificate
	interKey          crypto.Signer
	trustedRoot       string
	dir               string
	untrustedInter    *x509.Certificate
	untrustedInterKey crypto.Signer
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	// Not ca.GenerateRootCa/GenerateFulcioIntermediate: their
	// intermediate starts 2 minutes ago, too late for a leaf that has
	// already expired.
	rootCert, inter, interKey := newCA(t, "trusted")
	fulcio := &root.FulcioCertificateAuthority{Root: rootCert, Intermediates: []*x509.Certificate{inter},
		URI: "https://fulcio.test", ValidityPeriodStart: time.Now().Add(-24 * time.Hour), ValidityPeriodEnd: time.Now().Add(24 * time.Hour)}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, []root.CertificateAuthority{fulcio}, nil, vs.TimestampingAuthorities(), nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{vs: vs, inter: inter, interKey: interKey, dir: t.TempDir()}
	p.trustedRoot = filepath.Join(p.dir, "trusted_root.json")
	if err := os.WriteFile(p.trustedRoot, j, 0o644); err != nil {
		t.Fatal(err)
	}
	_, p.untrustedInter, p.untrustedInterKey = newCA(t, "untrusted")
	return p
}

// newCA makes a root and a code-signing intermediate valid from a day ago
// to a day from now.
func newCA(t testing.TB, name string) (rootCert, inter *x509.Certificate, interKey *ecdsa.PrivateKey) {
	t.Helper()
	mk := func(cn string, serial int64, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{name}},
			NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k
	}
	rootCert, rootKey := mk(name+" root", 1, nil, nil)
	inter, interKey = mk(name+" intermediate", 2, rootCert, rootKey)
	return rootCert, inter, interKey
}

// certProvider hands sign.Bundle a certificate made beforehand.
type certProvider []byte

func (c certProvider) GetCertificate(context.Context, sign.Keypair, *sign.CertificateProviderOptions) ([]byte, error) {
	return c, nil
}

// keylessBundle signs manifest with a fresh key certified for subject
// (an e-mail SAN) and issuer, valid from notBefore for 10 minutes, by the
// trusted CA or another, with a timestamp of now from the TSA.
func (p *pki) keylessBundle(t testing.TB, manifest []byte, subject, issuer string, notBefore time.Time, trusted bool) []byte {
	t.Helper()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	inter, key := p.inter, p.interKey
	if !trusted {
		inter, key = p.untrustedInter, p.untrustedInterKey
	}
	leaf, err := ca.GenerateLeafCert(subject, issuer, notBefore, priv, inter, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sign.Bundle(&sign.PlainData{Data: manifest}, &keypair{key: priv}, sign.BundleOptions{CertificateProvider: certProvider(leaf.Raw)})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := p.vs.TimestampResponse(b.GetMessageSignature().GetSignature())
	if err != nil {
		t.Fatal(err)
	}
	b.VerificationMaterial.TimestampVerificationData = &protobundle.TimestampVerificationData{
		Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts}}}
	j, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (p *pki) policy(t testing.TB, doc string) *Policy {
	t.Helper()
	pol, err := ParsePolicy([]byte(doc+"\ntrustedRoot: trusted_root.json\n"), p.dir)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

const (
	issuer  = "https://token.actions.example"
	subject = "release@acme.example"
)

// TestKeyless: a bundle with a certificate from the trusted root's CA,
// for the right issuer and subject, timestamped while the certificate was
// valid, verifies under exact and prefix identities; the wrong identity,
// an expired certificate, a CA not in the root and a key-signed bundle
// are each refused, the error naming the rule and the reason.
func TestKeyless(t *testing.T) {
	p := newPKI(t)
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)
	d := digest.FromBytes(manifest)
	good := p.keylessBundle(t, manifest, subject, issuer, time.Now().Add(-time.Minute), true)

	exact := p.policy(t, "anyOf:\n- keyless: {issuer: "+issuer+", subject: "+subject+"}")
	res, err := exact.VerifyBundles(d, [][]byte{good})
	if err != nil || len(res.Matched) != 1 || res.Matched[0] != "identity issuer="+issuer+" subject="+subject {
		t.Fatalf("exact identity: %+v, %v", res, err)
	}
	prefix := p.policy(t, "allOf:\n- keyless: {issuerPrefix: https://token.actions., subjectPrefix: release@}")
	if _, err := prefix.VerifyBundles(d, [][]byte{good}); err != nil {
		t.Fatalf("prefix identity: %v", err)
	}

	cases := []struct {
		name   string
		bundle []byte
		policy *Policy
		want   []string
	}{
		{"wrong identity", good, p.policy(t, "anyOf:\n- keyless: {issuer: "+issuer+", subject: mallory@acme.example}"),
			[]string{"anyOf: 0 of 1 matched", "identity issuer=" + issuer + " subject=mallory@acme.example", "certificate identity", "mallory@acme.example"}},
		{"wrong issuer", good, p.policy(t, "anyOf:\n- keyless: {issuer: https://evil.example, subject: "+subject+"}"),
			[]string{"identity issuer=https://evil.example", "https://evil.example"}},
		{"prefix not matching", good, p.policy(t, "anyOf:\n- keyless: {issuer: "+issuer+", subjectPrefix: release@acme.example.evil}"),
			[]string{"subjectPrefix=release@acme.example.evil"}},
		{"expired certificate", p.keylessBundle(t, manifest, subject, issuer, time.Now().Add(-time.Hour), true), exact,
			[]string{"identity issuer=", "certificate expired or not yet valid at the bundle's timestamp"}},
		{"untrusted CA", p.keylessBundle(t, manifest, subject, issuer, time.Now().Add(-time.Minute), false), exact,
			[]string{"identity issuer=", "not issued by a CA of the trusted root"}},
		{"another digest", p.keylessBundle(t, []byte(`{"other":1}`), subject, issuer, time.Now().Add(-time.Minute), true), exact,
			[]string{"a signature of another digest"}},
	}
	k, _ := newKeyPEM(t)
	keyBundle, _ := k.SignManifest(context.Background(), manifest)
	cases = append(cases, struct {
		name   string
		bundle []byte
		policy *Policy
		want   []string
	}{"key bundle for an identity rule", keyBundle, exact, []string{"signed with a key, not a certificate"}})
	for _, c := range cases {
		_, err := c.policy.VerifyBundles(d, [][]byte{c.bundle})
		t.Logf("%s: %v", c.name, err)
		if !errors.Is(err, ErrPolicy) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strings.Contains(c.name, "identity") || strings.Contains(c.name, "issuer") || strings.Contains(c.name, "prefix") {
			if strings.Contains(err.Error(), "expired") || strings.Contains(err.Error(), "trusted root") {
				t.Errorf("%s: an identity mismatch blamed on the certificate: %v", c.name, err)
			}
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
}
