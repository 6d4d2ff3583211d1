package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Replayer is an http.RoundTripper that answers requests from a cassette.
// It never touches the network. It is safe for concurrent use.
type Replayer struct {
	redact Redaction
	ignore []Ignore

	mu         sync.Mutex
	c          *Cassette
	used       []bool
	mismatches []*Mismatch
}

// NewReplayer returns a Replayer for c. redact must redact what the
// Recorder redacted (the zero value matches a zero-value Recorder). ignore
// lists request fields that differ from run to run.
func NewReplayer(c *Cassette, redact Redaction, ignore ...Ignore) *Replayer {
	return &Replayer{redact: redact, ignore: ignore, c: c, used: make([]bool, len(c.Interactions))}
}

// Ignore names JSON fields of request bodies whose values legitimately
// change from run to run — a generated key pair, a random name suffix, a
// nonce — so replay does not compare them. The fields must still be
// present. A provider that needs no Ignore rules is the easiest to test.
type Ignore struct {
	// Method restricts the rule to one method ("" for any).
	Method string `json:"method,omitempty"`
	// Path restricts the rule to URL paths ending in Path ("" for any),
	// e.g. "/v1/ssh_keys".
	Path string `json:"path,omitempty"`
	// Fields are dotted paths into a JSON object body: "public_key",
	// "metadata.nonce".
	Fields []string `json:"fields"`
}

// masked returns req's body with the ignored fields replaced by a marker.
func (r *Replayer) masked(req Request) Request {
	var fields []string
	for _, ig := range r.ignore {
		if (ig.Method == "" || ig.Method == req.Method) && strings.HasSuffix(pathOf(req.URL), ig.Path) {
			fields = append(fields, ig.Fields...)
		}
	}
	if len(fields) == 0 || len(req.Body) == 0 {
		return req
	}
	var doc any
	if err := json.Unmarshal(req.Body, &doc); err != nil {
		return req
	}
	for _, f := range fields {
		obj, ok := doc.(map[string]any)
		parts := strings.Split(f, ".")
		for i, p := range parts {
			if !ok {
				break
			}
			if i == len(parts)-1 {
				if _, present := obj[p]; present {
					obj[p] = "<ignored>"
				}
				break
			}
			obj, ok = obj[p].(map[string]any)
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return req
	}
	req.Body = b
	return req
}

// Mismatch is a request that matched no recorded interaction.
type Mismatch struct {
	Scope string
	// Request is the request as it was matched (redacted).
	Request Request
	// Diff compares the closest recorded request (lines starting with "-")
	// with this one ("+"); empty when the scope had nothing left to compare.
	Diff string
	// Reason says why nothing matched.
	Reason string
}

func (m *Mismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cassette: no recorded interaction matches %s %s", m.Request.Method, m.Request.URL)
	if m.Scope != "" {
		fmt.Fprintf(&b, " in scope %q", m.Scope)
	}
	if m.Reason != "" {
		b.WriteString(" (" + m.Reason + ")")
	}
	if m.Diff != "" {
		b.WriteString("\n--- recorded\n+++ actual\n" + m.Diff)
	}
	return b.String()
}

// RoundTrip implements http.RoundTripper.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	got := r.masked(Request{Method: req.Method, URL: r.redact.URL(req.URL), Body: r.redact.Body(body)})
	scope := ScopeFrom(req.Context())

	r.mu.Lock()
	defer r.mu.Unlock()
	var candidates []int
	for i, in := range r.c.Interactions {
		if in.Scope != scope || r.used[i] {
			continue
		}
		if matches(r.masked(in.Request), got) {
			r.used[i] = true
			return response(req, in.Response), nil
		}
		candidates = append(candidates, i)
	}
	m := &Mismatch{Scope: scope, Request: got}
	if elsewhere := r.identicalElsewhere(scope, got); elsewhere != "" {
		m.Reason = elsewhere
	} else if len(candidates) == 0 {
		m.Reason = "every interaction recorded in this scope was already used"
	} else {
		best := candidates[0]
		for _, i := range candidates {
			rec := r.c.Interactions[i].Request
			if rec.Method == got.Method && pathOf(rec.URL) == pathOf(got.URL) {
				best = i
				break
			}
		}
		m.Diff = Diff(render(r.masked(r.c.Interactions[best].Request)), render(got))
	}
	r.mismatches = append(r.mismatches, m)
	return nil, m
}

// identicalElsewhere explains a request that matches nothing left in its
// scope but is identical to one recorded under another scope, or to one
// of its own scope already replayed: the sign of calls for different
// Machines sharing a scope, whose identical requests take each other's
// recorded answers. It returns "" when there is no such interaction. r.mu
// is held.
func (r *Replayer) identicalElsewhere(scope string, got Request) string {
	other := ""
	for i, in := range r.c.Interactions {
		if !matches(r.masked(in.Request), got) {
			continue
		}
		if in.Scope == scope && r.used[i] {
			return "an identical request of this scope was already answered: when calls for several Machines share a scope, " +
				"their identical requests take each other's recorded answers in whatever order they run; give each Machine's calls " +
				"a scope of its own (cassette.WithScope(ctx, check+\"/\"+machine), as the conformance suite does) or make the requests " +
				"distinguishable (a per-Machine name, tag or label in the URL or body)"
		}
		if in.Scope != scope && other == "" {
			other = in.Scope
		}
	}
	if other != "" {
		return fmt.Sprintf("an identical request was recorded in scope %q: the calls were recorded under other scopes than they replay in; "+
			"give each Machine's calls the scope they were recorded with (cassette.WithScope)", other)
	}
	return ""
}

func response(req *http.Request, rec Response) *http.Response {
	h := http.Header{}
	for k, vs := range rec.Header {
		h[k] = append([]string(nil), vs...)
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.Status) + " " + http.StatusText(rec.Status),
		StatusCode:    rec.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(rec.Body)),
		ContentLength: int64(len(rec.Body)),
		Request:       req,
	}
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// matches compares method, URL and body; JSON bodies compare as values, so
// key order and whitespace do not matter. Headers are not compared: they
// carry tokens, user agents and lengths that say nothing about what was
// asked.
func matches(rec, got Request) bool {
	return rec.Method == got.Method && rec.URL == got.URL && sameBody(rec.Body, got.Body)
}

func sameBody(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, oka := canonicalJSON(a)
	cb, okb := canonicalJSON(b)
	return oka && okb && bytes.Equal(ca, cb)
}

func canonicalJSON(b []byte) ([]byte, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	out, err := json.MarshalIndent(v, "", "  ")
	return out, err == nil
}

// render is the text a diff compares: the request line and the body (JSON
// pretty-printed with sorted keys).
func render(req Request) []string {
	lines := []string{req.Method + " " + req.URL}
	if len(req.Body) == 0 {
		return lines
	}
	if c, ok := canonicalJSON(req.Body); ok {
		return append(lines, strings.Split(string(c), "\n")...)
	}
	return append(lines, strings.Split(string(req.Body), "\n")...)
}

// within reports whether s is scope or one of its sub-scopes
// ("check/machine" is within "check").
func within(s, scope string) bool {
	return s == scope || strings.HasPrefix(s, scope+"/")
}

// Mismatches returns the mismatches seen in scope and its sub-scopes.
func (r *Replayer) Mismatches(scope string) []*Mismatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Mismatch
	for _, m := range r.mismatches {
		if within(m.Scope, scope) {
			out = append(out, m)
		}
	}
	return out
}

// Unused returns the interactions of scope and its sub-scopes that were
// never replayed.
func (r *Replayer) Unused(scope string) []Interaction {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Interaction
	for i, in := range r.c.Interactions {
		if within(in.Scope, scope) && !r.used[i] {
			out = append(out, in)
		}
	}
	return out
}

// Check returns an error describing every mismatch and every unused
// interaction of scope and its sub-scopes, or nil when the replay of them
// was exact.
func (r *Replayer) Check(scope string) error {
	var errs []error
	for _, m := range r.Mismatches(scope) {
		errs = append(errs, m)
	}
	if unused := r.Unused(scope); len(unused) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "cassette: %d recorded interaction(s) in scope %q were never requested:", len(unused), scope)
		for _, in := range unused {
			fmt.Fprintf(&b, "\n  %s %s", in.Request.Method, in.Request.URL)
			if in.Scope != scope {
				fmt.Fprintf(&b, " (scope %q)", in.Scope)
			}
		}
		errs = append(errs, errors.New(b.String()))
	}
	return errors.Join(errs...)
}

// nested reports whether s is a sub-scope of another scope in scopes.
func nested(s string, scopes map[string]bool) bool {
	for t := range scopes {
		if t != s && within(s, t) {
			return true
		}
	}
	return false
}

// CheckAll is Check for every scope of the cassette and every scope a
// mismatch was seen in.
func (r *Replayer) CheckAll() error {
	r.mu.Lock()
	scopes := map[string]bool{}
	for _, in := range r.c.Interactions {
		scopes[in.Scope] = true
	}
	for _, m := range r.mismatches {
		scopes[m.Scope] = true
	}
	r.mu.Unlock()
	names := make([]string, 0, len(scopes))
	for s := range scopes {
		if !nested(s, scopes) { // Check of its parent covers it
			names = append(names, s)
		}
	}
	sort.Strings(names)
	var errs []error
	for _, s := range names {
		if err := r.Check(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Diff returns a line diff of a and b: common lines prefixed "  ", lines
// only in a "- ", lines only in b "+ ". Long runs of common lines are
// elided.
func Diff(a, b []string) string {
	// Longest common subsequence; requests are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 3
	keep := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for d := -context; d <= context; d++ {
				if k+d >= 0 && k+d < len(lines) {
					keep[k+d] = true
				}
			}
		}
	}
	var out strings.Builder
	for k, l := range lines {
		if !keep[k] {
			if k == 0 || keep[k-1] {
				out.WriteString("  ...\n")
			}
			continue
		}
		out.WriteByte(l.op)
		out.WriteString(" " + l.text + "\n")
	}
	return out.String()
}
