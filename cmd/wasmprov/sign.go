package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

func init() {
	register("keygen", "write an ECDSA P-256 key pair (PEM) for signing provider modules", runKeygen)
	register("sign", "sign a provider module in an OCI registry (a Sigstore bundle attached as a referrer)", withHints(runSign))
	register("verify", "verify the Sigstore signatures of a provider module in an OCI registry against a policy", withHints(runVerify))
}

// signFlags are the OCI flags and the referrers fallback switch.
type signFlags struct {
	*ociFlags
	noReferrersAPI bool
}

func addSignFlags(fs *flag.FlagSet, reads ociReads) *signFlags {
	f := &signFlags{ociFlags: addOCIFlags(fs, reads)}
	fs.BoolVar(&f.noReferrersAPI, "no-referrers-api", false, "use the referrers tag schema (sha256-<hex> tags) even if the registry has the referrers API")
	return f
}

// client is ociFlags.client with NoReferrersAPI, which the other OCI
// commands do not need.
func (f *signFlags) client() (*oci.Client, error) {
	opts, err := f.commandOptions()
	if err != nil {
		return nil, err
	}
	opts.NoReferrersAPI = f.noReferrersAPI
	return oci.New(opts)
}

func runKeygen(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	out := fs.String("o", "", "write the private key to `KEY` (mode 0600) and the public key to KEY.pub (required)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov keygen -o KEY\n\n"+
			"Writes a new ECDSA P-256 key pair in PEM: KEY, the private key (PKCS #8, not\n"+
			"encrypted: keep it secret), and KEY.pub, the public key a policy names.\n"+
			"Existing files are not overwritten.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		fs.Usage()
		return errors.New("want -o KEY and no arguments")
	}
	if *out == stdoutName {
		// Unlike a module or a bundle, a private key must not land in a
		// terminal's scrollback, a CI log or a pipe to who knows what.
		return errors.New("-o -: keygen does not write a private key to stdout; give a file name (KEY, and KEY.pub beside it)")
	}
	priv, pub, err := signature.GenerateKey()
	if err != nil {
		return err
	}
	if err := writeExclusive(*out, priv, 0o600); err != nil {
		return err
	}
	if err := writeExclusive(*out+".pub", pub, 0o644); err != nil {
		os.Remove(*out)
		return err
	}
	fmt.Fprintf(stdout, "%s\n%s.pub\n", *out, *out)
	return nil
}

// writeExclusive writes a file that must not exist yet.
func writeExclusive(name string, b []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	return f.Close()
}

func runSign(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	f := addSignFlags(fs, readsAll) // it pulls the artifact to sign its manifest
	keyFile := fs.String("key", "", "the private key: unencrypted ECDSA P-256 PEM, as wasmprov keygen writes (required)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov sign --key KEY REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]\n\n"+
			"Signs the artifact's manifest digest (which names the module, its config and\n"+
			"annotations) and attaches the Sigstore bundle (application/vnd.dev.sigstore.bundle.v0.3+json)\n"+
			"to it as an OCI referrer: through the referrers API, or a sha256-<hex> tag for a\n"+
			"registry without one. Prints the signed reference and the signature's.\n\nflags:")
		printFlags(fs, f.hidden)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *keyFile == "" {
		fs.Usage()
		return errors.New("want one reference and --key")
	}
	if err := needTagOrDigest(pos[0]); err != nil {
		return err
	}
	pemBytes, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	key, err := signature.ParsePrivateKey(pemBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", *keyFile, err)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	signed, referrer, err := signature.Sign(ctx, c, pos[0], key)
	if err != nil {
		return err
	}
	repo := repoOf(pos[0])
	fmt.Fprintf(stdout, "signed %s@%s\nsignature %s@%s (key %s)\n", repo, signed, repo, referrer, key.ID())
	return nil
}

func runVerify(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	// The store: the signatures found are kept there, and an artifact
	// pinned by digest is verified from it offline.
	f := addSignFlags(fs, readsRegistry|readsStore)
	policyFile := fs.String("policy", "", "the signature policy (YAML or JSON: anyOf/allOf rules of publicKey, publicKeyFile, keyless)")
	keyFile := fs.String("key", "", "a public key (PEM, as keygen writes KEY.pub): the policy of one rule, that key")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wasmprov verify REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST] (--key KEY.pub | --policy FILE)\n\n"+
			"Fetches the Sigstore bundles attached to the artifact and checks them against the\n"+
			"policy, or against the one public key --key names. Prints the verified reference\n"+
			"and the rules that matched; fails with the rules that did not and why. See\n"+
			"docs/DISTRIBUTION.md, \"Signing and verifying\".\n\nflags:")
		printFlags(fs, f.hidden)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*policyFile == "") == (*keyFile == "") {
		fs.Usage()
		return errors.New("want one reference and exactly one of --key KEY.pub (one public key) and --policy FILE (anything more)")
	}
	if err := needTagOrDigest(pos[0]); err != nil {
		return err
	}
	var p *signature.Policy
	if *keyFile != "" {
		p, err = keyPolicy(*keyFile)
	} else {
		p, err = signature.ParsePolicyFile(*policyFile)
	}
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	res, err := signature.Verify(ctx, c, pos[0], p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "verified %s@%s: %s (%d bundle(s) attached)\n", repoOf(pos[0]), res.Digest, strings.Join(res.Matched, ", "), res.Bundles)
	return nil
}

// keyPolicy is the policy --key stands for: anyOf the one key. The key is
// read here, not named as publicKeyFile, so that an error names the file
// as the user gave it.
func keyPolicy(file string) (*signature.Policy, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	p := &signature.Policy{AnyOf: []signature.Rule{{PublicKey: string(pem)}}}
	if err := p.Compile(); err != nil {
		return nil, fmt.Errorf("--key %s: %w", file, err)
	}
	return p, nil
}
