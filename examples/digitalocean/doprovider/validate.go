package doprovider

import (
	"context"
	"slices"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Validate checks the configuration as upstream does — token, region and
// size set, a supported operating system, not IPv6 only — then that the
// region exists and the size exists, is available and is offered in the
// region; and, beyond upstream, that the operating system's image exists.
// Every such failure is a terminal InvalidConfiguration error; API faults
// stay transient.
func (p *Provider) Validate(ctx context.Context, spec provider.MachineSpec) error {
	c, err := getConfig(ctx, spec, true)
	if err != nil {
		return err
	}
	if err := check(c); err != nil {
		return err
	}
	cl := newClient(ctx, c.Token)
	regions, err := listAll(func(o *godo.ListOptions) ([]godo.Region, *godo.Response, error) {
		return cl.Regions.List(ctx, o)
	}, perPage)
	if err != nil {
		return classify(err, "failed to list regions")
	}
	if !slices.ContainsFunc(regions, func(r godo.Region) bool { return r.Slug == c.Region }) {
		return provider.Terminal(provider.InvalidConfiguration, "region %q not found", c.Region)
	}
	sizes, err := listAll(func(o *godo.ListOptions) ([]godo.Size, *godo.Response, error) {
		return cl.Sizes.List(ctx, o)
	}, perPage)
	if err != nil {
		return classify(err, "failed to list sizes")
	}
	i := slices.IndexFunc(sizes, func(s godo.Size) bool { return s.Slug == c.Size })
	switch {
	case i < 0:
		return provider.Terminal(provider.InvalidConfiguration, "size %q not found", c.Size)
	case !sizes[i].Available:
		return provider.Terminal(provider.InvalidConfiguration, "size %q is not available", c.Size)
	case !slices.Contains(sizes[i].Regions, c.Region):
		return provider.Terminal(provider.InvalidConfiguration, "size %q is not available in region %q", c.Size, c.Region)
	}
	slug, _ := slugForOS(c.OperatingSystem) // check accepted it
	if _, _, err := cl.Images.GetBySlug(ctx, slug); err != nil {
		if isNotFound(err) {
			return provider.Terminal(provider.InvalidConfiguration, "image %q of operating system %q does not exist", slug, c.OperatingSystem)
		}
		return classify(err, "failed to get image")
	}
	return nil
}
