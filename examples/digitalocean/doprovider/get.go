package doprovider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Get finds the Machine's droplet by its UID tag (or, while DigitalOcean
// has not applied the tags of a new droplet, by the ID recorded on the
// Machine); none is ErrInstanceNotFound.
func (p *Provider) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return nil, err
	}
	tag, err := uidTag(m.UID)
	if err != nil {
		return nil, err
	}
	d, err := findDroplet(ctx, newClient(ctx, c.Token), m, tag)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, provider.ErrInstanceNotFound
	}
	return instance(d), nil
}

// uidTag is the tag that ties a droplet to its Machine: the Machine's UID,
// as upstream tags it. A UID DigitalOcean cannot take as a tag name (never
// a Kubernetes one) is refused before it reaches a URL.
func uidTag(uid string) (string, error) {
	if !validTag.MatchString(uid) {
		return "", provider.Terminal(provider.InvalidConfiguration, "machine UID %q cannot be a DigitalOcean tag name", uid)
	}
	return uid, nil
}

// dropletName is the droplet's name: the Machine's spec.metadata.name, as
// upstream, else its name.
func dropletName(m *provider.Machine) string {
	if m.Spec.Name != "" {
		return m.Spec.Name
	}
	return m.Name
}

// listAll reads every page of a listing.
func listAll[T any](list func(*godo.ListOptions) ([]T, *godo.Response, error), per int) ([]T, error) {
	var out []T
	for page := 1; ; page++ {
		items, resp, err := list(&godo.ListOptions{Page: page, PerPage: per})
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if resp == nil || resp.Links == nil || resp.Links.IsLastPage() {
			return out, nil
		}
		if page == 1000 {
			return nil, fmt.Errorf("a listing of more than 1000 pages of %d", per)
		}
	}
}

// taggedDroplets lists the droplets carrying tag, oldest first.
func taggedDroplets(ctx context.Context, cl *godo.Client, tag string) ([]godo.Droplet, error) {
	list, err := listAll(func(o *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return cl.Droplets.ListByTag(ctx, tag, o)
	}, perPage)
	if err != nil {
		return nil, classify(err, "failed to list droplets")
	}
	list = slices.DeleteFunc(list, func(d godo.Droplet) bool { return !slices.Contains(d.Tags, tag) })
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list, nil
}

// annotatedDroplet is the droplet whose ID the Machine records, if it
// still exists and is the Machine's: its name, and the UID tag or no tags
// yet (DigitalOcean applies a new droplet's tags once it runs).
func annotatedDroplet(ctx context.Context, cl *godo.Client, m *provider.Machine, tag string) (*godo.Droplet, error) {
	id, err := strconv.Atoi(m.Annotations[DropletIDAnnotation])
	if err != nil || id < 1 {
		return nil, nil
	}
	d, _, err := cl.Droplets.Get(ctx, id)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(err, "failed to get droplet")
	}
	if d == nil || d.Name != dropletName(m) || (len(d.Tags) > 0 && !slices.Contains(d.Tags, tag)) {
		return nil, nil
	}
	return d, nil
}

// findDroplets returns every droplet of the Machine: those with its UID
// tag, else the one its annotation names.
func findDroplets(ctx context.Context, cl *godo.Client, m *provider.Machine, tag string) ([]godo.Droplet, error) {
	list, err := taggedDroplets(ctx, cl, tag)
	if err != nil || len(list) > 0 {
		return list, err
	}
	d, err := annotatedDroplet(ctx, cl, m, tag)
	if err != nil || d == nil {
		return nil, err
	}
	return []godo.Droplet{*d}, nil
}

// findDroplet returns the Machine's droplet; with several (which Create
// never makes), the oldest.
func findDroplet(ctx context.Context, cl *godo.Client, m *provider.Machine, tag string) (*godo.Droplet, error) {
	list, err := findDroplets(ctx, cl, m, tag)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	if len(list) > 1 {
		provider.Logger(ctx).Warn("several droplets carry the machine's UID tag", "uid", tag, "count", len(list))
	}
	return &list[0], nil
}

// instance is upstream's doInstance.
func instance(d *godo.Droplet) *provider.Instance {
	id := strconv.Itoa(d.ID)
	inst := &provider.Instance{Name: d.Name, ID: id, Addresses: map[string]string{}, Status: status(d.Status)}
	if d.Name != "" {
		inst.ProviderID = "digitalocean://" + id
	}
	if d.Networks != nil {
		for _, n := range d.Networks.V4 {
			inst.Addresses[n.IPAddress] = addressType(n.Type)
		}
		for _, n := range d.Networks.V6 {
			inst.Addresses[n.IPAddress] = addressType(n.Type)
		}
	}
	return inst
}

func addressType(networkType string) string {
	if networkType == "public" {
		return "ExternalIP"
	}
	return "InternalIP"
}

func status(s string) provider.InstanceStatus {
	switch s {
	case "new":
		return provider.StatusCreating
	case "active":
		return provider.StatusRunning
	}
	return provider.StatusUnknown
}
