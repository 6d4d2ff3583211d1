package doprovider

import (
	"context"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Delete deletes every droplet of the Machine (a droplet already gone, a
// 404, is deleted) and then any temporary SSH key a Create of it left
// behind. DigitalOcean destroys a droplet once it accepted the DELETE, so
// Delete returns done then; upstream's Cleanup instead answers "not done"
// once and finds nothing on the next call.
func (p *Provider) Delete(ctx context.Context, m *provider.Machine) error {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return err
	}
	tag, err := uidTag(m.UID)
	if err != nil {
		return err
	}
	cl := newClient(ctx, c.Token)
	droplets, err := findDroplets(ctx, cl, m, tag)
	if err != nil {
		return err
	}
	for _, d := range droplets {
		if _, err := cl.Droplets.Delete(ctx, d.ID); err != nil && !isNotFound(err) {
			return classify(err, "failed to delete droplet "+strconv.Itoa(d.ID))
		}
		provider.Logger(ctx).Info("droplet deleted", "id", d.ID, "name", d.Name)
	}
	return deleteTempKeys(ctx, cl, m.UID)
}

// deleteTempKeys deletes the temporary SSH keys of the Machine that a
// Create could not delete.
func deleteTempKeys(ctx context.Context, cl *godo.Client, uid string) error {
	keys, err := listAll(func(o *godo.ListOptions) ([]godo.Key, *godo.Response, error) {
		return cl.Keys.List(ctx, o)
	}, perPage)
	if err != nil {
		return classify(err, "failed to list ssh keys")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k.Name, TempKeyPrefix+uid+"-") {
			continue
		}
		if _, err := cl.Keys.DeleteByID(ctx, k.ID); err != nil && !isNotFound(err) {
			return classify(err, "failed to delete temporary ssh key "+k.Name)
		}
	}
	return nil
}

// MigrateUID moves the Machine's droplets from the old UID tag to the new
// one, as upstream: creates the new tag (an existing tag is fine), tags
// the droplets with it, and removes the old tag from them.
func (p *Provider) MigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return err
	}
	oldTag, err := uidTag(m.UID)
	if err != nil {
		return err
	}
	newTag, err := uidTag(newUID)
	if err != nil {
		return err
	}
	cl := newClient(ctx, c.Token)
	droplets, err := findDroplets(ctx, cl, m, oldTag)
	if err != nil {
		return err
	}
	if len(droplets) == 0 {
		provider.Logger(ctx).Info("no droplet to migrate")
		return nil
	}
	if _, _, err := cl.Tags.Create(ctx, &godo.TagCreateRequest{Name: newTag}); err != nil {
		return classify(err, "failed to create new UID tag")
	}
	var res []godo.Resource
	for _, d := range droplets {
		res = append(res, godo.Resource{ID: strconv.Itoa(d.ID), Type: godo.DropletResourceType})
	}
	if _, err := cl.Tags.TagResources(ctx, newTag, &godo.TagResourcesRequest{Resources: res}); err != nil {
		return classify(err, "failed to tag droplet with new UID tag")
	}
	if _, err := cl.Tags.UntagResources(ctx, oldTag, &godo.UntagResourcesRequest{Resources: res}); err != nil && !isNotFound(err) {
		return classify(err, "failed to remove old UID tag")
	}
	return nil
}
