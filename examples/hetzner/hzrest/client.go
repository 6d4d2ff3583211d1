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

// Location implements hzprovider.API.
func (c *Client) Location(ctx context.Context, name string) (*hzprovider.Location, error) {
	l, err := c.byName(ctx, "/locations", name, nil)
	if err != nil || len(l.Locations) == 0 {
		return nil, err
	}
	return &hzprovider.Location{ID: l.Locations[0].ID, Name: l.Locations[0].Name}, nil
}

// Datacenter implements hzprovider.API.
func (c *Client) Datacenter(ctx context.Context, name string) (*hzprovider.Datacenter, error) {
	l, err := c.byName(ctx, "/datacenters", name, nil)
	if err != nil || len(l.Datacenters) == 0 {
		return nil, err
	}
	d := l.Datacenters[0]
	return &hzprovider.Datacenter{ID: d.ID, Name: d.Name, Location: d.Location.Name}, nil
}

// ServerType implements hzprovider.API.
func (c *Client) ServerType(ctx context.Context, name string) (*hzprovider.ServerType, error) {
	l, err := c.byName(ctx, "/server_types", name, nil)
	if err != nil || len(l.ServerTypes) == 0 {
		return nil, err
	}
	t := l.ServerTypes[0]
	return &hzprovider.ServerType{ID: t.ID, Name: t.Name, Architecture: t.Architecture}, nil
}

// Image implements hzprovider.API.
func (c *Client) Image(ctx context.Context, idOrName, arch string) (*hzprovider.Image, error) {
	if id, err := strconv.ParseInt(idOrName, 10, 64); err == nil {
		var one struct {
			Image struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"image"`
		}
		if err := c.do(ctx, methodGet, "/images/"+strconv.FormatInt(id, 10), nil, &one); err != nil {
			if hzprovider.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return &hzprovider.Image{ID: one.Image.ID, Name: one.Image.Name}, nil
	}
	l, err := c.byName(ctx, "/images", idOrName, url.Values{"architecture": {arch}, "include_deprecated": {"true"}})
	if err != nil || len(l.Images) == 0 {
		return nil, err
	}
	return &hzprovider.Image{ID: l.Images[0].ID, Name: l.Images[0].Name}, nil
}

// CreateSSHKey implements hzprovider.API.
func (c *Client) CreateSSHKey(ctx context.Context, name, pub string, labels map[string]string) (int64, error) {
	var out struct {
		SSHKey struct {
			ID int64 `json:"id"`
		} `json:"ssh_key"`
	}
	err := c.do(ctx, methodPost, "/ssh_keys", map[string]any{"name": name, "public_key": pub, "labels": labels}, &out)
	return out.SSHKey.ID, err
}

// DeleteSSHKey implements hzprovider.API.
func (c *Client) DeleteSSHKey(ctx context.Context, id int64) error {
	return c.do(ctx, methodDelete, "/ssh_keys/"+strconv.FormatInt(id, 10), nil, nil)
}

// SSHKeys implements hzprovider.API.
func (c *Client) SSHKeys(ctx context.Context, selector string) ([]int64, error) {
	var ids []int64
	err := c.list(ctx, "/ssh_keys", url.Values{"label_selector": {selector}}, func(b []byte) error {
		var page struct {
			SSHKeys []struct {
				ID int64 `json:"id"`
			} `json:"ssh_keys"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		for _, k := range page.SSHKeys {
			ids = append(ids, k.ID)
		}
		return nil
	})
	return ids, err
}

type server struct {
	ID        int64             `json:"id"`
	Name      string            `json:"name"`
	Status    string            `json:"status"`
	Labels    map[string]string `json:"labels"`
	PublicNet struct {
		IPv4 *struct {
			IP string `json:"ip"`
		} `json:"ipv4"`
		IPv6 *struct {
			IP string `json:"ip"`
		} `json:"ipv6"`
		FloatingIPs []int64 `json:"floating_ips"`
	} `json:"public_net"`
	PrivateNet []struct {
		IP string `json:"ip"`
	} `json:"private_net"`
	PlacementGroup *struct {
		ID int64 `json:"id"`
	} `json:"placement_group"`
	Volumes  []int64 `json:"volumes"`
	Location *struct {
		Name string `json:"name"`
	} `json:"location"`
	Datacenter struct {
		Name     string `json:"name"`
		Location struct {
			Name string `json:"name"`
		} `json:"location"`
	} `json:"datacenter"`
}

func (s *server) convert() *hzprovider.Server {
	out := &hzprovider.Server{ID: s.ID, Name: s.Name, Status: s.Status, Labels: s.Labels, Volumes: s.Volumes,
		Datacenter: s.Datacenter.Name, Location: s.Datacenter.Location.Name}
	if s.Location != nil && s.Location.Name != "" {
		out.Location = s.Location.Name
	}
	if s.PublicNet.IPv4 != nil {
		out.PublicIPv4 = s.PublicNet.IPv4.IP
	}
	if s.PublicNet.IPv6 != nil {
		out.PublicIPv6 = s.PublicNet.IPv6.IP
	}
	for _, p := range s.PrivateNet {
		out.PrivateIPs = append(out.PrivateIPs, p.IP)
	}
	out.FloatingIPs = s.PublicNet.FloatingIPs
	if s.PlacementGroup != nil {
		out.PlacementGroup = s.PlacementGroup.ID
	}
	return out
}

func (c *Client) servers(ctx context.Context, q url.Values) ([]*hzprovider.Server, error) {
	var out []*hzprovider.Server
	err := c.list(ctx, "/servers", q, func(b []byte) error {
		var page struct {
			Servers []server `json:"servers"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		for i := range page.Servers {
			out = append(out, page.Servers[i].convert())
		}
		return nil
	})
	return out, err
}

// Servers implements hzprovider.API.
func (c *Client) Servers(ctx context.Context, selector string) ([]*hzprovider.Server, error) {
	return c.servers(ctx, url.Values{"label_selector": {selector}})
}

// ServerByName implements hzprovider.API.
func (c *Client) ServerByName(ctx context.Context, name string) (*hzprovider.Server, error) {
	l, err := c.servers(ctx, url.Values{"name": {name}})
	if err != nil || len(l) == 0 {
		return nil, err
	}
	return l[0], nil
}

// Server implements hzprovider.API.
func (c *Client) Server(ctx context.Context, id int64) (*hzprovider.Server, error) {
	var out struct {
		Server server `json:"server"`
	}
	if err := c.do(ctx, methodGet, "/servers/"+strconv.FormatInt(id, 10), nil, &out); err != nil {
		if hzprovider.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return out.Server.convert(), nil
}

// CreateServer implements hzprovider.API.
func (c *Client) CreateServer(ctx context.Context, o hzprovider.CreateServerOpts) (*hzprovider.Server, error) {
	req := map[string]any{
		"name": o.Name, "server_type": o.ServerType, "image": strconv.FormatInt(o.Image, 10),
		"ssh_keys": o.SSHKeys, "user_data": o.UserData, "labels": o.Labels, "start_after_create": true,
		"public_net": map[string]bool{"enable_ipv4": o.EnableIPv4, "enable_ipv6": o.EnableIPv6},
	}
	if o.Location != "" {
		req["location"] = o.Location
	}
	if o.Datacenter != "" {
		req["datacenter"] = o.Datacenter
	}
	if len(o.Networks) > 0 {
		req["networks"] = o.Networks
	}
	if len(o.Firewalls) > 0 {
		fws := make([]map[string]int64, 0, len(o.Firewalls))
		for _, id := range o.Firewalls {
			fws = append(fws, map[string]int64{"firewall": id})
		}
		req["firewalls"] = fws
	}
	if o.PlacementGroup != 0 {
		req["placement_group"] = o.PlacementGroup
	}
	var out struct {
		Server server `json:"server"`
	}
	if err := c.do(ctx, methodPost, "/servers", req, &out); err != nil {
		return nil, err
	}
	if out.Server.ID == 0 {
		return nil, fmt.Errorf("POST /servers: answer has no server")
	}
	return out.Server.convert(), nil
}

// SetServerLabels implements hzprovider.API.
func (c *Client) SetServerLabels(ctx context.Context, id int64, labels map[string]string) error {
	return c.do(ctx, methodPut, "/servers/"+strconv.FormatInt(id, 10), map[string]any{"labels": labels}, nil)
}

type actionAnswer struct {
	Action struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"action"`
}

// DeleteServer implements hzprovider.API.
func (c *Client) DeleteServer(ctx context.Context, id int64) (int64, error) {
	var out actionAnswer
	err := c.do(ctx, methodDelete, "/servers/"+strconv.FormatInt(id, 10), nil, &out)
	return out.Action.ID, err
}

// DetachVolume implements hzprovider.API.
func (c *Client) DetachVolume(ctx context.Context, id int64) (int64, error) {
	var out actionAnswer
	err := c.do(ctx, methodPost, "/volumes/"+strconv.FormatInt(id, 10)+"/actions/detach", struct{}{}, &out)
	return out.Action.ID, err
}

// WaitForAction implements hzprovider.API.
func (c *Client) WaitForAction(ctx context.Context, id int64) error {
	for {
		var out actionAnswer
		if err := c.do(ctx, methodGet, "/actions/"+strconv.FormatInt(id, 10), nil, &out); err != nil {
			return err
		}
		switch out.Action.Status {
		case "success":
			return nil
		case "error":
			if e := out.Action.Error; e != nil {
				return fmt.Errorf("action %d failed: %s: %s", id, e.Code, e.Message)
			}
			return fmt.Errorf("action %d failed", id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for action %d: %w", id, ctx.Err())
		case <-time.After(c.PollInterval):
		}
	}
}

type idName struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Network implements hzprovider.API.
func (c *Client) Network(ctx context.Context, name string) (*hzprovider.Network, error) {
	var l struct {
		Networks []idName `json:"networks"`
	}
	if err := c.do(ctx, methodGet, "/networks?"+url.Values{"name": {name}}.Encode(), nil, &l); err != nil || len(l.Networks) == 0 {
		return nil, err
	}
	return &hzprovider.Network{ID: l.Networks[0].ID, Name: l.Networks[0].Name}, nil
}

// Firewall implements hzprovider.API.
func (c *Client) Firewall(ctx context.Context, name string) (*hzprovider.Firewall, error) {
	var l struct {
		Firewalls []idName `json:"firewalls"`
	}
	if err := c.do(ctx, methodGet, "/firewalls?"+url.Values{"name": {name}}.Encode(), nil, &l); err != nil || len(l.Firewalls) == 0 {
		return nil, err
	}
	return &hzprovider.Firewall{ID: l.Firewalls[0].ID, Name: l.Firewalls[0].Name}, nil
}

// FloatingIP implements hzprovider.API.
func (c *Client) FloatingIP(ctx context.Context, id int64) (string, error) {
	var out struct {
		FloatingIP struct {
			IP string `json:"ip"`
		} `json:"floating_ip"`
	}
	if err := c.do(ctx, methodGet, "/floating_ips/"+strconv.FormatInt(id, 10), nil, &out); err != nil {
		if hzprovider.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return out.FloatingIP.IP, nil
}

type placementGroup struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	Servers []int64 `json:"servers"`
}

func (g *placementGroup) convert() *hzprovider.PlacementGroup {
	return &hzprovider.PlacementGroup{ID: g.ID, Name: g.Name, Servers: len(g.Servers)}
}

// PlacementGroups implements hzprovider.API.
func (c *Client) PlacementGroups(ctx context.Context) ([]*hzprovider.PlacementGroup, error) {
	var out []*hzprovider.PlacementGroup
	err := c.list(ctx, "/placement_groups", url.Values{"type": {"spread"}}, func(b []byte) error {
		var page struct {
			PlacementGroups []placementGroup `json:"placement_groups"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return err
		}
		for i := range page.PlacementGroups {
			out = append(out, page.PlacementGroups[i].convert())
		}
		return nil
	})
	return out, err
}

// PlacementGroup implements hzprovider.API.
func (c *Client) PlacementGroup(ctx context.Context, id int64) (*hzprovider.PlacementGroup, error) {
	var out struct {
		PlacementGroup placementGroup `json:"placement_group"`
	}
	if err := c.do(ctx, methodGet, "/placement_groups/"+strconv.FormatInt(id, 10), nil, &out); err != nil {
		if hzprovider.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return out.PlacementGroup.convert(), nil
}

// CreatePlacementGroup implements hzprovider.API.
func (c *Client) CreatePlacementGroup(ctx context.Context, name string, labels map[string]string) (*hzprovider.PlacementGroup, error) {
	var out struct {
		PlacementGroup placementGroup `json:"placement_group"`
	}
	if err := c.do(ctx, methodPost, "/placement_groups", map[string]any{"name": name, "type": "spread", "labels": labels}, &out); err != nil {
		return nil, err
	}
	return out.PlacementGroup.convert(), nil
}

// DeletePlacementGroup implements hzprovider.API.
func (c *Client) DeletePlacementGroup(ctx context.Context, id int64) error {
	return c.do(ctx, methodDelete, "/placement_groups/"+strconv.FormatInt(id, 10), nil, nil)
}
