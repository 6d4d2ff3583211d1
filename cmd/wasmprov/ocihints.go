package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/wasmprov/wasmprov/runtime/oci"
)

// withHints wraps the errors of an OCI command with a hint that names the
// fix, when the error is one whose fix is a flag or another command away:
// the errors come from net/http, crypto/x509 and the registry, in their
// terms, and a user should not have to translate them.
func withHints(run func(ctx context.Context, args []string) error) func(ctx context.Context, args []string) error {
	return func(ctx context.Context, args []string) error {
		return hinted(run(ctx, args), args)
	}
}

// hinted returns err with a hint appended on a line of its own (the
// error stays err for errors.Is and As), or err as it is.
func hinted(err error, args []string) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	h := hintFor(err, args)
	if h == "" {
		return err
	}
	return fmt.Errorf("%w\nhint: %s", err, h)
}

func hintFor(err error, args []string) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		host := errHost(err)
		if host == "" {
			host = registryOf(args)
		}
		if oci.Loopback(host) {
			return fmt.Sprintf("the registry at %s speaks plain HTTP: add --plain-http (allowed for loopback registries only)", host)
		}
		return fmt.Sprintf("the registry at %s speaks plain HTTP, which wasmprov allows for loopback registries only (--plain-http): serve it over TLS", host)
	case errors.As(err, new(x509.UnknownAuthorityError)):
		return "the registry's certificate is signed by a CA this machine does not trust: add --ca-file CA.pem (the registry's CA certificate, PEM)"
	case errors.Is(err, oci.ErrRefused) && strings.Contains(msg, "over the limit of"):
		return fmt.Sprintf("if the module is meant to be that large, raise --max-module-bytes (default %d)", oci.DefaultMaxBlobSize)
	case oci.NeedsLogin(err) && !errors.Is(err, oci.ErrUnauthorized):
		host := registryOf(args)
		if host == "" {
			_, host = oci.HTTPStatus(err)
		}
		if host == "" {
			host = "REGISTRY"
		}
		return fmt.Sprintf("the registry wants credentials: wasmprov login %s -u USER --password-stdin (or --docker-config naming a config.json that has them)", host)
	case oci.IsNotFound(err):
		for _, a := range args {
			if i := strings.Index(a, "@sha256:"); i > 0 && !strings.HasPrefix(a, "-") {
				return fmt.Sprintf("the registry has no manifest %s: pull and pin by the manifest digest, which push and "+
					"'wasmprov digest %s:TAG' print; the module's sha256 (what inspect, annotate and policy pins show) is "+
					"another digest, not pullable ('wasmprov store ls' shows both for what the store holds)", a[i+1:], a[:i])
			}
		}
	}
	return ""
}

// errHost is the host of the request err is about, if it says.
func errHost(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Host
		}
	}
	return ""
}

// registryOf is the registry of the first argument that reads as a
// reference (HOST/REPOSITORY…, HOST with a dot, a port, or localhost),
// "" if none: file names (relative, absolute, or without a dotted first
// element) and flags are passed over.
func registryOf(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "/") || strings.HasPrefix(a, ".") {
			continue
		}
		host, rest, ok := strings.Cut(a, "/")
		if ok && rest != "" && (strings.ContainsAny(host, ".:") || host == "localhost") {
			return host
		}
	}
	return ""
}
