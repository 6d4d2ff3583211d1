// Package hzrest is a small Hetzner Cloud API client on encoding/json,
// implementing hzprovider.API. It sends its requests through a Doer — in
// the wasmprov guest the host's http_do (provider.DoHTTP, main.go), where
// the host's policy decides which hosts are reachable; natively net/http
// (package hzrest/nethttp). It does not import net/http: in the guest
// net/http (with crypto/tls, crypto/x509 and the rest it links) would be
// most of an 11.5 MB module that the host decodes, validates and
// instantiates on every start, for a client the host does the HTTP of.
package hzrest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
)

// Doer sends one HTTP request and returns its whole answer. An answer with
// any status is a success of Do; a transport failure or a refusal (the
// host's policy) is its error. ctx bounds the request.
type Doer interface {
	Do(ctx context.Context, req *Request) (*Response, error)
}

// Request is an HTTP request as a Doer sends it.
type Request struct {
	Method string
	URL    string
	Header Header
	Body   []byte // nil: no body
}

// Response is an HTTP answer.
type Response struct {
	Status int
	Header Header
	Body   []byte
}

// Header is an HTTP header, keyed by canonical names ("Retry-After").
type Header map[string][]string

// Get returns the first value of key, matched as HTTP does, ignoring case
// (a Doer may not canonicalize the names it got).
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// The methods the client uses (net/http's constants, which this package
// does not import).
const (
	methodGet    = "GET"
	methodPost   = "POST"
	methodPut    = "PUT"
	methodDelete = "DELETE"

	statusTooManyRequests = 429
)

// Client is an hzprovider.API over HTTP.
type Client struct {
	Endpoint string
	Token    string
	HTTP     Doer
	// PollInterval is the pause between two polls of an action.
	PollInterval time.Duration
}

var _ hzprovider.API = (*Client)(nil)

// New returns an hzprovider.NewAPI sending its requests through d.
func New(d Doer) hzprovider.NewAPI {
	return func(endpoint, token string) hzprovider.API {
		return &Client{Endpoint: endpoint, Token: token, HTTP: d, PollInterval: 100 * time.Millisecond}
	}
}

type errorBody struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// do sends a request and decodes a 2xx answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	req := &Request{Method: method, URL: c.Endpoint + path, Header: Header{
		"Authorization": {"Bearer " + c.Token},
		"User-Agent":    {"wasmprov-hetzner/1"},
	}}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		req.Body = b
		req.Header["Content-Type"] = []string{"application/json"}
	}
	if _, err := url.Parse(req.URL); err != nil {
		return err
	}
	resp, err := c.HTTP.Do(ctx, req)
	if err != nil {
		// As net/http's client words it (a *url.Error): `Get "URL": ...`.
		return fmt.Errorf("%s %q: %w", method[:1]+strings.ToLower(method[1:]), req.URL, err)
	}
	b := resp.Body
	if resp.Status < 200 || resp.Status > 299 {
		ae := &hzprovider.APIError{Status: resp.Status, RetryAfter: retryAfter(resp)}
		var eb errorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
			ae.Code, ae.Message = eb.Error.Code, eb.Error.Message
		} else {
			ae.Message = fmt.Sprintf("%s %s: answer is not an error object: %.100q", method, path, b)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

// retryAfter reads Retry-After, or for a 429 the time until one request of
// the budget refills, from the RateLimit-* headers.
func retryAfter(resp *Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if resp.Status != statusTooManyRequests {
		return 0
	}
	limit, err1 := strconv.Atoi(resp.Header.Get("RateLimit-Limit"))
	reset, err2 := strconv.ParseInt(resp.Header.Get("RateLimit-Reset"), 10, 64)
	remaining, _ := strconv.Atoi(resp.Header.Get("RateLimit-Remaining"))
	if err1 != nil || err2 != nil || limit <= remaining {
		return 0
	}
	untilFull := time.Until(time.Unix(reset, 0))
	if untilFull <= 0 {
		return time.Second
	}
	d := untilFull / time.Duration(limit-remaining)
	return max(d, time.Second)
}

type pagination struct {
	Meta struct {
		Pagination struct {
			NextPage *int `json:"next_page"`
		} `json:"pagination"`
	} `json:"meta"`
}

// list fetches every page of a collection; page decodes one answer and
// returns its next page (0 when it is the last).
func (c *Client) list(ctx context.Context, path string, q url.Values, page func([]byte) error) error {
	if q == nil {
		q = url.Values{}
	}
	q.Set("per_page", "50")
	for p := 1; p != 0; {
		q.Set("page", strconv.Itoa(p))
		var raw json.RawMessage
		if err := c.do(ctx, methodGet, path+"?"+q.Encode(), nil, &raw); err != nil {
			return err
		}
		if err := page(raw); err != nil {
			return fmt.Errorf("GET %s: decoding answer: %w", path, err)
		}
		var pg pagination
		if err := json.Unmarshal(raw, &pg); err != nil {
			return fmt.Errorf("GET %s: decoding pagination: %w", path, err)
		}
		p = 0
		if n := pg.Meta.Pagination.NextPage; n != nil {
			p = *n
		}
	}
	return nil
}

type namedList struct {
	Locations []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"locations"`
	Datacenters []struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		Location struct {
			Name string `json:"name"`
		} `json:"location"`
	} `json:"datacenters"`
	ServerTypes []struct {
		ID           int64  `json:"id"`
		Name         string `json:"name"`
		Architecture string `json:"architecture"`
	} `json:"server_types"`
	Images []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"images"`
}

func (c *Client) byName(ctx context.Context, path, name string, extra url.Values) (*namedList, error) {
	q := url.Values{"name": {name}}
	for k, v := range extra {
		q[k] = v
	}
	var l namedList
	if err := c.do(ctx, methodGet, path+"?"+q.Encode(), nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}
