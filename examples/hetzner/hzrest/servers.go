package hzrest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
)

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

// DeleteServer implements hzprovider.API.
func (c *Client) DeleteServer(ctx context.Context, id int64) (int64, error) {
	var out actionAnswer
	err := c.do(ctx, methodDelete, "/servers/"+strconv.FormatInt(id, 10), nil, &out)
	return out.Action.ID, err
}
