package hzrest

import (
	"context"
	"net/url"
	"strconv"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
)

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
