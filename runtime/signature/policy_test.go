package signature

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParsePolicy: the policy is decoded strictly and checked: a typo, a
// duplicate key, a rule of two kinds, a keyless rule without a trusted
// root or with an issuer given twice, a non-ECDSA or broken key, and
// minMatches over the number of rules are errors naming the problem; a
// publicKeyFile is read relative to the policy file.
func TestParsePolicy(t *testing.T) {
	_, pub := newKeyPEM(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "release.pub"), []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	indented := "    " + strings.ReplaceAll(strings.TrimSpace(pub), "\n", "\n    ")
	good := "anyOf:\n- publicKey: |\n" + indented + "\n- publicKeyFile: release.pub\nminMatches: 2\n"
	p, err := ParsePolicy([]byte(good), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.AnyOf[0].keyID == "" || p.AnyOf[0].keyID != p.AnyOf[1].keyID {
		t.Fatalf("key ids %q, %q", p.AnyOf[0].keyID, p.AnyOf[1].keyID)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePolicyFile(filepath.Join(dir, "policy.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{"", "empty"},
		{"anyof:\n- publicKeyFile: release.pub\n", `unknown field "anyof"`},
		{"anyOf:\n- publicKeyFile: release.pub\nanyOf: []\n", "already set"},
		{"anyOf:\n- {publicKeyFile: release.pub, keyless: {issuer: a, subject: b}}\n", "exactly one of"},
		{"anyOf:\n- keyless: {issuer: a, subject: b}\n", "keyless rules need trustedRoot"},
		{"anyOf:\n- keyless: {issuer: a, issuerPrefix: a, subject: b}\ntrustedRoot: x.json\n", "one way each"},
		{"anyOf:\n- keyless: {issuer: a, subjet: b}\n", `unknown field "anyOf[0].keyless.subjet"`},
		{"anyOf:\n- publicKey: nope\n", "not a PEM PUBLIC KEY"},
		{"anyOf:\n- publicKeyFile: release.pub\nminMatches: 2\n", "minMatches 2, but anyOf has 1 rules"},
		{"allOf:\n- keyless: {issuer: a, subject: b}\ntrustedRoot: missing.json\n", "trustedRoot"},
		{"allOf:\n- publicKey: |\n    -----BEGIN PUBLIC KEY-----\n    MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n    -----END PUBLIC KEY-----\n", "only ECDSA keys"},
	} {
		_, err := ParsePolicy([]byte(c.doc), dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.doc, err, c.want)
		}
	}
}
