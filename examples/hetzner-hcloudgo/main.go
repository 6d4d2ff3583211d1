// Command hetzner-hcloudgo is the Hetzner provider of examples/hetzner with
// its cloud API calls made by the official SDK, github.com/hetznercloud/hcloud-go/v2,
// unmodified, over the guest SDK's http.RoundTripper (hosthttp.Transport).
// The provider logic (package hzprovider) is the same; only the API client
// differs. It is a module of its own so that hcloud-go never enters
// wasmprov's go.mod.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hetzner-hcloudgo.wasm .
package main

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/guests/go/hosthttp"
)

func init() { hzprovider.Register(newAPI) }

func main() {}

// api adapts an *hcloud.Client to hzprovider.API.
type api struct{ c *hcloud.Client }

func newAPI(endpoint, token string) hzprovider.API {
	return &api{hcloud.NewClient(
		hcloud.WithEndpoint(endpoint),
		hcloud.WithToken(token),
		hcloud.WithApplication("wasmprov-hetzner-hcloudgo", "1"),
		hcloud.WithHTTPClient(&http.Client{Transport: hosthttp.Transport}),
		// Retries are the controller's business: it requeues with the
		// retry hint the provider reports. Without this, hcloud-go would
		// sleep inside the call on 429s and 5xx.
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0, BackoffFunc: hcloud.ConstantBackoff(0)}),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(100 * time.Millisecond)}),
	)}
}

// convert turns hcloud-go's errors into *hzprovider.APIError.
func convert(resp *hcloud.Response, err error) error {
	if err == nil {
		return nil
	}
	var he hcloud.Error
	if errors.As(err, &he) {
		ae := &hzprovider.APIError{Code: string(he.Code), Message: he.Message}
		if r := he.Response(); r != nil && r.Response != nil {
			ae.Status = r.StatusCode
			ae.RetryAfter = retryAfter(r)
		}
		return ae
	}
	if errors.Is(err, hcloud.ErrStatusCode) {
		// An error status without an error object. The All* helpers return
		// no response; the status is the error's last word.
		if resp != nil && resp.Response != nil {
			return &hzprovider.APIError{Status: resp.StatusCode, Message: err.Error(), RetryAfter: retryAfter(resp)}
		}
		msg := err.Error()
		status, _ := strconv.Atoi(msg[strings.LastIndexByte(msg, ' ')+1:])
		return &hzprovider.APIError{Status: status, Message: msg}
	}
	return err
}

func retryAfter(r *hcloud.Response) time.Duration {
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	rl := r.Meta.Ratelimit
	if r.StatusCode != http.StatusTooManyRequests || rl.Limit <= rl.Remaining || rl.Reset.IsZero() {
		return 0
	}
	d := time.Until(rl.Reset) / time.Duration(rl.Limit-rl.Remaining)
	return max(d, time.Second)
}

func (a *api) Location(ctx context.Context, name string) (*hzprovider.Location, error) {
	l, resp, err := a.c.Location.GetByName(ctx, name)
	if err != nil || l == nil {
		return nil, convert(resp, err)
	}
	return &hzprovider.Location{ID: l.ID, Name: l.Name}, nil
}

func (a *api) Datacenter(ctx context.Context, name string) (*hzprovider.Datacenter, error) {
	d, resp, err := a.c.Datacenter.GetByName(ctx, name)
	if err != nil || d == nil {
		return nil, convert(resp, err)
	}
	out := &hzprovider.Datacenter{ID: d.ID, Name: d.Name}
	if d.Location != nil {
		out.Location = d.Location.Name
	}
	return out, nil
}

func (a *api) ServerType(ctx context.Context, name string) (*hzprovider.ServerType, error) {
	t, resp, err := a.c.ServerType.GetByName(ctx, name)
	if err != nil || t == nil {
		return nil, convert(resp, err)
	}
	return &hzprovider.ServerType{ID: t.ID, Name: t.Name, Architecture: string(t.Architecture)}, nil
}

func (a *api) Image(ctx context.Context, idOrName, arch string) (*hzprovider.Image, error) {
	img, resp, err := a.c.Image.GetForArchitecture(ctx, idOrName, hcloud.Architecture(arch))
	if err != nil || img == nil {
		return nil, convert(resp, err)
	}
	return &hzprovider.Image{ID: img.ID, Name: img.Name}, nil
}

func (a *api) CreateSSHKey(ctx context.Context, name, pub string, labels map[string]string) (int64, error) {
	k, resp, err := a.c.SSHKey.Create(ctx, hcloud.SSHKeyCreateOpts{Name: name, PublicKey: pub, Labels: labels})
	if err != nil {
		return 0, convert(resp, err)
	}
	return k.ID, nil
}

func (a *api) DeleteSSHKey(ctx context.Context, id int64) error {
	resp, err := a.c.SSHKey.Delete(ctx, &hcloud.SSHKey{ID: id})
	return convert(resp, err)
}

func (a *api) SSHKeys(ctx context.Context, selector string) ([]int64, error) {
	keys, err := a.c.SSHKey.AllWithOpts(ctx, hcloud.SSHKeyListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector, PerPage: 50}})
	if err != nil {
		return nil, convert(nil, err)
	}
	ids := make([]int64, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids, nil
}

func server(s *hcloud.Server) *hzprovider.Server {
	out := &hzprovider.Server{ID: s.ID, Name: s.Name, Status: string(s.Status), Labels: s.Labels}
	if ip := s.PublicNet.IPv4.IP; ip != nil && !s.PublicNet.IPv4.IsUnspecified() {
		out.PublicIPv4 = ip.String()
	}
	if n := s.PublicNet.IPv6.Network; n != nil && !s.PublicNet.IPv6.IsUnspecified() {
		out.PublicIPv6 = n.String()
	}
	for _, p := range s.PrivateNet {
		out.PrivateIPs = append(out.PrivateIPs, p.IP.String())
	}
	for _, v := range s.Volumes {
		out.Volumes = append(out.Volumes, v.ID)
	}
	if s.Location != nil {
		out.Location = s.Location.Name
	}
	for _, f := range s.PublicNet.FloatingIPs {
		out.FloatingIPs = append(out.FloatingIPs, f.ID)
	}
	if s.PlacementGroup != nil {
		out.PlacementGroup = s.PlacementGroup.ID
	}
	return out
}

func (a *api) Servers(ctx context.Context, selector string) ([]*hzprovider.Server, error) {
	list, err := a.c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: selector, PerPage: 50}})
	if err != nil {
		return nil, convert(nil, err)
	}
	out := make([]*hzprovider.Server, 0, len(list))
	for _, s := range list {
		out = append(out, server(s))
	}
	return out, nil
}

func (a *api) ServerByName(ctx context.Context, name string) (*hzprovider.Server, error) {
	s, resp, err := a.c.Server.GetByName(ctx, name)
	if err != nil || s == nil {
		return nil, convert(resp, err)
	}
	return server(s), nil
}

func (a *api) Server(ctx context.Context, id int64) (*hzprovider.Server, error) {
	s, resp, err := a.c.Server.GetByID(ctx, id)
	if err != nil || s == nil {
		return nil, convert(resp, err)
	}
	return server(s), nil
}

func (a *api) CreateServer(ctx context.Context, o hzprovider.CreateServerOpts) (*hzprovider.Server, error) {
	opts := hcloud.ServerCreateOpts{
		Name: o.Name, ServerType: &hcloud.ServerType{Name: o.ServerType}, Image: &hcloud.Image{ID: o.Image},
		UserData: o.UserData, Labels: o.Labels, StartAfterCreate: hcloud.Ptr(true),
		PublicNet: &hcloud.ServerCreatePublicNet{EnableIPv4: o.EnableIPv4, EnableIPv6: o.EnableIPv6},
	}
	for _, k := range o.SSHKeys {
		opts.SSHKeys = append(opts.SSHKeys, &hcloud.SSHKey{ID: k})
	}
	loc := o.Location
	if o.Datacenter != "" {
		// hcloud-go v2.51 creates servers by location only (the API
		// deprecated datacenter); place it in the datacenter's location.
		dc, err := a.Datacenter(ctx, o.Datacenter)
		if err != nil {
			return nil, err
		}
		if dc != nil {
			loc = dc.Location
		}
	}
	if loc != "" {
		opts.Location = &hcloud.Location{Name: loc}
	}
	for _, id := range o.Networks {
		opts.Networks = append(opts.Networks, &hcloud.Network{ID: id})
	}
	for _, id := range o.Firewalls {
		opts.Firewalls = append(opts.Firewalls, &hcloud.ServerCreateFirewall{Firewall: hcloud.Firewall{ID: id}})
	}
	if o.PlacementGroup != 0 {
		opts.PlacementGroup = &hcloud.PlacementGroup{ID: o.PlacementGroup}
	}
	res, resp, err := a.c.Server.Create(ctx, opts)
	if err != nil {
		return nil, convert(resp, err)
	}
	return server(res.Server), nil
}

func (a *api) SetServerLabels(ctx context.Context, id int64, labels map[string]string) error {
	_, resp, err := a.c.Server.Update(ctx, &hcloud.Server{ID: id}, hcloud.ServerUpdateOpts{Labels: labels})
	return convert(resp, err)
}

func (a *api) DeleteServer(ctx context.Context, id int64) (int64, error) {
	res, resp, err := a.c.Server.DeleteWithResult(ctx, &hcloud.Server{ID: id})
	if err != nil {
		return 0, convert(resp, err)
	}
	return res.Action.ID, nil
}

func (a *api) DetachVolume(ctx context.Context, id int64) (int64, error) {
	act, resp, err := a.c.Volume.Detach(ctx, &hcloud.Volume{ID: id})
	if err != nil {
		return 0, convert(resp, err)
	}
	return act.ID, nil
}

func (a *api) WaitForAction(ctx context.Context, id int64) error {
	act, resp, err := a.c.Action.GetByID(ctx, id)
	if err != nil {
		return convert(resp, err)
	}
	if act == nil {
		return errors.New("action " + strconv.FormatInt(id, 10) + " not found")
	}
	return convert(nil, a.c.Action.WaitFor(ctx, act))
}

func (a *api) Network(ctx context.Context, name string) (*hzprovider.Network, error) {
	n, resp, err := a.c.Network.GetByName(ctx, name)
	if err != nil || n == nil {
		return nil, convert(resp, err)
	}
	return &hzprovider.Network{ID: n.ID, Name: n.Name}, nil
}

func (a *api) Firewall(ctx context.Context, name string) (*hzprovider.Firewall, error) {
	f, resp, err := a.c.Firewall.GetByName(ctx, name)
	if err != nil || f == nil {
		return nil, convert(resp, err)
	}
	return &hzprovider.Firewall{ID: f.ID, Name: f.Name}, nil
}

func (a *api) FloatingIP(ctx context.Context, id int64) (string, error) {
	f, resp, err := a.c.FloatingIP.GetByID(ctx, id)
	if err != nil || f == nil || f.IP == nil {
		return "", convert(resp, err)
	}
	return f.IP.String(), nil
}

func group(g *hcloud.PlacementGroup) *hzprovider.PlacementGroup {
	return &hzprovider.PlacementGroup{ID: g.ID, Name: g.Name, Servers: len(g.Servers)}
}

func (a *api) PlacementGroups(ctx context.Context) ([]*hzprovider.PlacementGroup, error) {
	list, err := a.c.PlacementGroup.AllWithOpts(ctx, hcloud.PlacementGroupListOpts{
		ListOpts: hcloud.ListOpts{PerPage: 50}, Type: hcloud.PlacementGroupTypeSpread})
	if err != nil {
		return nil, convert(nil, err)
	}
	out := make([]*hzprovider.PlacementGroup, 0, len(list))
	for _, g := range list {
		out = append(out, group(g))
	}
	return out, nil
}

func (a *api) PlacementGroup(ctx context.Context, id int64) (*hzprovider.PlacementGroup, error) {
	g, resp, err := a.c.PlacementGroup.GetByID(ctx, id)
	if err != nil || g == nil {
		return nil, convert(resp, err)
	}
	return group(g), nil
}

func (a *api) CreatePlacementGroup(ctx context.Context, name string, labels map[string]string) (*hzprovider.PlacementGroup, error) {
	res, resp, err := a.c.PlacementGroup.Create(ctx, hcloud.PlacementGroupCreateOpts{Name: name, Labels: labels, Type: hcloud.PlacementGroupTypeSpread})
	if err != nil {
		return nil, convert(resp, err)
	}
	return group(res.PlacementGroup), nil
}

func (a *api) DeletePlacementGroup(ctx context.Context, id int64) error {
	resp, err := a.c.PlacementGroup.Delete(ctx, &hcloud.PlacementGroup{ID: id})
	return convert(resp, err)
}
