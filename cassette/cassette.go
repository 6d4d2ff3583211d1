// Package cassette records the HTTP traffic a provider sends through the
// host's http_do function and replays it, so provider tests run offline and
// byte-for-byte repeatably.
//
// A Cassette is a JSON file of request/response pairs. A Recorder is an
// http.RoundTripper that forwards requests to the real cloud (or a
// simulator) and records them; a Replayer is an http.RoundTripper that
// answers from a cassette and never touches the network. Either plugs into
// the host with runtime.WithHTTPTransport(func(http.RoundTripper) http.RoundTripper { return rt }).
//
// Secrets never reach the file: Authorization-like headers, token-like query
// parameters and any literal secret value the caller names are replaced by
// "REDACTED" before a request is stored, and incoming requests are redacted
// the same way before they are matched, so a replay matches whatever token
// the test uses.
//
// Interactions carry a scope (see WithScope): a test or conformance check
// puts its name in the context of its provider calls, and replay matches a
// request only against interactions recorded under the same scope, in
// order. Independent scopes may run concurrently without disturbing each
// other; calls that run concurrently within one scope must not send
// identical requests, or they take each other's recorded answers. So a
// scope is per Machine: the conformance suite scopes each Machine's calls
// "check/machine". Scopes nest at "/": Replayer.Check of "check" covers
// "check/machine". A request that matches nothing fails the http_do call
// and is recorded as a Mismatch, with a diff against the closest recorded
// request, or the reason an identical request went elsewhere.
package cassette

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"unicode/utf8"
)

// Version is the cassette file format version.
const Version = 1

// Redacted replaces secrets in recorded traffic.
const Redacted = "REDACTED"

// Cassette is the content of a cassette file.
type Cassette struct {
	Version      int           `json:"version"`
	Interactions []Interaction `json:"interactions"`
}

// Interaction is one request and the response the cloud gave.
type Interaction struct {
	Scope    string   `json:"scope,omitempty"`
	Request  Request  `json:"request"`
	Response Response `json:"response"`
}

// Request is a recorded request, redacted.
type Request struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header http.Header `json:"header,omitempty"`
	Body   Body        `json:"body,omitempty"`
}

// Response is a recorded response.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   Body        `json:"body,omitempty"`
}

// Body is a message body. It is stored as a JSON string when it is valid
// UTF-8 (readable diffs) and as {"base64": "..."} otherwise, so every byte
// survives the round trip.
type Body []byte

// MarshalJSON implements json.Marshaler.
func (b Body) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString(b)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (b *Body) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = Body(s)
		return nil
	}
	var enc struct {
		Base64 string `json:"base64"`
	}
	if err := json.Unmarshal(data, &enc); err != nil {
		return fmt.Errorf("cassette body must be a string or {\"base64\": ...}: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(enc.Base64)
	if err != nil {
		return err
	}
	*b = raw
	return nil
}

// Load reads a cassette file.
func Load(path string) (*Cassette, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Cassette
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	if c.Version != Version {
		return nil, fmt.Errorf("cassette %s: version %d, this reader supports %d", path, c.Version, Version)
	}
	return &c, nil
}

// Marshal encodes c deterministically: interactions sorted by scope name,
// recording order kept within a scope, header names sorted, two-space
// indentation.
func (c *Cassette) Marshal() ([]byte, error) {
	out := Cassette{Version: Version, Interactions: append([]Interaction(nil), c.Interactions...)}
	sort.SliceStable(out.Interactions, func(i, j int) bool {
		return out.Interactions[i].Scope < out.Interactions[j].Scope
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes c to path (see Marshal).
func (c *Cassette) Save(path string) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

type scopeKey struct{}

// WithScope returns a context whose HTTP requests are recorded under, and
// replayed from, scope.
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

// ScopeFrom returns the scope of ctx ("" when none).
func ScopeFrom(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// Redaction says what is secret in a request.
type Redaction struct {
	// Headers whose values are replaced (case-insensitive). Nil means
	// DefaultRedactHeaders.
	Headers []string
	// QueryParams whose values are replaced (case-insensitive). Nil means
	// DefaultRedactQuery.
	QueryParams []string
	// Secrets are literal values (tokens, passwords) replaced wherever they
	// occur: URL, header values and bodies of requests and responses.
	Secrets []string
}

// DefaultRedactHeaders are the headers redacted unless Redaction.Headers is
// set.
var DefaultRedactHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie",
	"X-Auth-Token", "X-Api-Key", "Api-Key", "X-Amz-Security-Token"}

// DefaultRedactQuery are the query parameters redacted unless
// Redaction.QueryParams is set.
var DefaultRedactQuery = []string{"token", "access_token", "api_key", "apikey", "key", "secret",
	"password", "signature", "x-amz-signature", "x-amz-credential", "sig"}

func (r Redaction) headers() []string {
	if r.Headers == nil {
		return DefaultRedactHeaders
	}
	return r.Headers
}

func (r Redaction) query() []string {
	if r.QueryParams == nil {
		return DefaultRedactQuery
	}
	return r.QueryParams
}

func (r Redaction) secrets(s string) string {
	for _, sec := range r.Secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// URL returns u with secret query parameters and literal secrets redacted.
func (r Redaction) URL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			for _, name := range r.query() {
				if strings.EqualFold(k, name) {
					for i := range q[k] {
						q[k][i] = Redacted
					}
				}
			}
		}
		c.RawQuery = q.Encode() // sorted by key: deterministic
	}
	return r.secrets(c.String())
}

// Header returns a copy of h with secret headers redacted. Volatile headers
// named in drop are removed.
func (r Redaction) Header(h http.Header, drop ...string) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
outer:
	for k, vs := range h {
		for _, d := range drop {
			if strings.EqualFold(k, d) {
				continue outer
			}
		}
		secret := false
		for _, name := range r.headers() {
			if strings.EqualFold(k, name) {
				secret = true
			}
		}
		cp := make([]string, len(vs))
		for i, v := range vs {
			if secret {
				cp[i] = Redacted
			} else {
				cp[i] = r.secrets(v)
			}
		}
		out[http.CanonicalHeaderKey(k)] = cp
	}
	return out
}

// Body returns b with literal secrets redacted.
func (r Redaction) Body(b []byte) []byte {
	if len(r.Secrets) == 0 || len(b) == 0 {
		return b
	}
	for _, sec := range r.Secrets {
		if sec != "" {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(Redacted))
		}
	}
	return b
}
