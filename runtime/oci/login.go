package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ErrUnauthorized: the registry refused the credentials given or found.
var ErrUnauthorized = errors.New("unauthorized")

// credentialStore opens the Docker configuration for writing. Plaintext
// is allowed because that is what `docker login` does without a
// credential helper; a config naming a helper (credsStore, credHelpers)
// still gets the credentials through the helper.
func (c *Client) credentialStore() (*credentials.DynamicStore, error) {
	opts := credentials.StoreOptions{AllowPlaintextPut: true}
	if c.opts.DockerConfig != "" {
		return credentials.NewStore(c.opts.DockerConfig, opts)
	}
	return credentials.NewStoreFromDocker(opts)
}

// Login checks user and password against the registry host (host or
// host:port) and, once the registry accepts them, stores them in the
// Docker configuration (Options.DockerConfig, or Docker's own), where
// every Client, docker, oras and cosign find them. It returns that
// configuration's path. Credentials the registry refuses are not stored,
// and the error wraps ErrUnauthorized.
func (c *Client) Login(ctx context.Context, host, user, password string) (string, error) {
	if err := (registry.Reference{Registry: host}).ValidateRegistry(); err != nil {
		return "", fmt.Errorf("%q is not a registry host (host or host:port): %w", host, err)
	}
	if c.opts.PlainHTTP && !Loopback(host) {
		return "", fmt.Errorf("%w: plain HTTP to %s: only a loopback registry (localhost, 127.0.0.1, [::1]) may be reached without TLS", ErrRefused, host)
	}
	store, err := c.credentialStore()
	if err != nil {
		return "", fmt.Errorf("reading registry credentials: %w", err)
	}
	ping := host
	if host == "docker.io" {
		ping = "registry-1.docker.io" // Docker Hub's API host; the key stays Docker's
	}
	reg := &remote.Registry{RepositoryOptions: remote.RepositoryOptions{
		Reference: registry.Reference{Registry: ping},
		PlainHTTP: c.opts.PlainHTTP,
		Client:    &auth.Client{Client: c.http, Cache: auth.NewCache()},
	}}
	err = credentials.Login(ctx, store, reg, auth.Credential{Username: user, Password: password})
	if status, _ := HTTPStatus(err); status == http.StatusUnauthorized || status == http.StatusForbidden {
		// oras' own message ends with the registry's error detail, a Go
		// map dump that says nothing the status does not.
		return "", fmt.Errorf("%w: %s refused user %q and the password given (HTTP %d): check both (a token for a password, on registries that want one)",
			ErrUnauthorized, host, user, status)
	}
	if err != nil {
		return "", fmt.Errorf("logging in to %s: %w", host, err)
	}
	return store.ConfigPath(), nil
}

// Logout removes the credentials of host from the Docker configuration
// and returns its path, and whether there were any to remove.
func (c *Client) Logout(ctx context.Context, host string) (string, bool, error) {
	store, err := c.credentialStore()
	if err != nil {
		return "", false, fmt.Errorf("reading registry credentials: %w", err)
	}
	key := credentials.ServerAddressFromRegistry(host)
	cred, err := store.Get(ctx, key)
	if err != nil {
		return store.ConfigPath(), false, fmt.Errorf("reading the credentials of %s: %w", host, err)
	}
	if cred == auth.EmptyCredential {
		return store.ConfigPath(), false, nil
	}
	if err := credentials.Logout(ctx, store, host); err != nil {
		return store.ConfigPath(), true, err
	}
	return store.ConfigPath(), true, nil
}

// HTTPStatus returns the HTTP status of the registry error response in
// err's chain and the host that answered it; 0 and "" if there is none.
// Callers tell "log in" from "no such thing" by it without parsing the
// message, whose registry detail is free-form.
func HTTPStatus(err error) (int, string) {
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) {
		return 0, ""
	}
	host := ""
	if resp.URL != nil {
		host = resp.URL.Host
	}
	return resp.StatusCode, host
}

// NeedsLogin reports whether err says the registry wants credentials
// that were not given (none for it in the Docker config) or that it did
// not accept.
func NeedsLogin(err error) bool {
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return true
	}
	status, _ := HTTPStatus(err)
	return status == http.StatusUnauthorized
}

// IsNotFound reports whether err says the registry has no such manifest,
// blob or repository.
func IsNotFound(err error) bool {
	if errors.Is(err, errdef.ErrNotFound) {
		return true
	}
	status, _ := HTTPStatus(err)
	return status == http.StatusNotFound
}
