package hzrest

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
)

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
