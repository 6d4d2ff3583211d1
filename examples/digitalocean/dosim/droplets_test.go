package dosim_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
)

func createReq(t *testing.T, c *godo.Client, name string, tags ...string) *godo.DropletCreateRequest {
	t.Helper()
	k, _, err := c.Keys.Create(context.Background(), &godo.KeyCreateRequest{Name: "k-" + name, PublicKey: pubKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &godo.DropletCreateRequest{Name: name, Region: "fra1", Size: "s-1vcpu-2gb",
		Image: godo.DropletCreateImage{Slug: "ubuntu-24-04-x64"}, SSHKeys: []godo.DropletCreateSSHKey{{Fingerprint: k.Fingerprint}},
		IPv6: true, UserData: "#cloud-config", Tags: tags}
}

// A droplet is new without addresses in its create answer, active with
// them once BootDuration has passed.
func TestDropletLifecycle(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	sim, c, _ := start(t, dosim.Options{BootDuration: time.Minute, Now: clk.now})
	ctx := context.Background()
	d, resp, err := c.Droplets.Create(ctx, createReq(t, c, "web-1", "machine-controller", "uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 202 || d.Status != "new" || len(d.Networks.V4) != 0 || strings.Join(d.Tags, ",") != "machine-controller,uid-1" ||
		len(resp.Links.Actions) != 1 || resp.Links.Actions[0].Rel != "create" {
		t.Fatalf("create answer: %d %+v links %+v", resp.StatusCode, d, resp.Links)
	}
	if got, _, _ := c.Droplets.Get(ctx, d.ID); got.Status != "new" {
		t.Errorf("before BootDuration: %s", got.Status)
	}
	clk.t = clk.t.Add(time.Minute)
	got, _, err := c.Droplets.Get(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub4, _ := got.PublicIPv4()
	priv4, _ := got.PrivateIPv4()
	pub6, _ := got.PublicIPv6()
	if got.Status != "active" || pub4 == "" || priv4 == "" || pub6 == "" || got.SizeSlug != "s-1vcpu-2gb" ||
		got.Region.Slug != "fra1" || got.Image.Slug != "ubuntu-24-04-x64" {
		t.Fatalf("after BootDuration: %+v", got)
	}
	info := sim.Droplets()
	if len(info) != 1 || info[0].UserData != "#cloud-config" || len(info[0].SSHKeys) != 1 || !info[0].IPv6 {
		t.Errorf("Droplets() = %+v", info)
	}
	if _, err := c.Droplets.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Droplets.Delete(ctx, d.ID); status(err) != 404 {
		t.Errorf("second delete: %v", err)
	}
	if _, _, err := c.Droplets.Get(ctx, d.ID); status(err) != 404 {
		t.Errorf("get after delete: %v", err)
	}
}

// An invalid create is refused with 422, and makes nothing.
func TestDropletCreateValidation(t *testing.T) {
	sim, c, _ := start(t, dosim.Options{})
	ctx := context.Background()
	for name, mod := range map[string]func(*godo.DropletCreateRequest){
		"name":       func(r *godo.DropletCreateRequest) { r.Name = "web_1" },
		"region":     func(r *godo.DropletCreateRequest) { r.Region = "xyz1" },
		"closed":     func(r *godo.DropletCreateRequest) { r.Region = "sfo2" },
		"size":       func(r *godo.DropletCreateRequest) { r.Size = "2gb" },
		"not-here":   func(r *godo.DropletCreateRequest) { r.Size = "gpu-h100x1-80gb" },
		"image":      func(r *godo.DropletCreateRequest) { r.Image.Slug = "ubuntu-20-04-x64" },
		"ssh key":    func(r *godo.DropletCreateRequest) { r.SSHKeys[0].Fingerprint = "00:11" },
		"tag":        func(r *godo.DropletCreateRequest) { r.Tags = []string{"a tag"} },
		"user data":  func(r *godo.DropletCreateRequest) { r.UserData = strings.Repeat("x", 64<<10+1) },
		"no image":   func(r *godo.DropletCreateRequest) { r.Image = godo.DropletCreateImage{} },
		"image ID 1": func(r *godo.DropletCreateRequest) { r.Image = godo.DropletCreateImage{ID: 1} },
	} {
		req := createReq(t, c, "web-1")
		mod(req)
		_, _, err := c.Droplets.Create(ctx, req)
		if status(err) != 422 {
			t.Errorf("%s: %v, want 422", name, err)
		}
	}
	if n := len(sim.Droplets()); n != 0 {
		t.Errorf("%d droplets were made", n)
	}
	req := createReq(t, c, "by-id")
	req.Image = godo.DropletCreateImage{ID: 169000003}
	if d, _, err := c.Droplets.Create(ctx, req); err != nil || d.Image.Slug != "rockylinux-9-x64" {
		t.Errorf("create by image ID: %+v %v", d, err)
	}
}

func TestListByTagAndName(t *testing.T) {
	_, c, _ := start(t, dosim.Options{MaxPerPage: 2})
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, _, err := c.Droplets.Create(ctx, createReq(t, c, "node-"+n, "pool", "uid-"+n)); err != nil {
			t.Fatal(err)
		}
	}
	list, resp, err := c.Droplets.ListByTag(ctx, "pool", &godo.ListOptions{PerPage: 200})
	if err != nil || len(list) != 2 || resp.Meta.Total != 3 || resp.Links.IsLastPage() {
		t.Fatalf("first page by tag: %d %+v %v", len(list), resp.Meta, err)
	}
	list, resp, err = c.Droplets.ListByTag(ctx, "pool", &godo.ListOptions{Page: 2, PerPage: 200})
	if err != nil || len(list) != 1 || list[0].Name != "node-c" || !resp.Links.IsLastPage() {
		t.Fatalf("second page by tag: %+v %v", list, err)
	}
	if list, _, err := c.Droplets.ListByTag(ctx, "uid-b", nil); err != nil || len(list) != 1 || list[0].Name != "node-b" {
		t.Errorf("by uid-b: %+v %v", list, err)
	}
	if list, _, err := c.Droplets.ListByName(ctx, "NODE-A", nil); err != nil || len(list) != 1 {
		t.Errorf("by name: %+v %v", list, err)
	}
	if list, _, err := c.Droplets.ListByTag(ctx, "nobody", nil); err != nil || len(list) != 0 {
		t.Errorf("unknown tag: %+v %v", list, err)
	}
	if _, _, err := c.Droplets.ListByTag(ctx, "pool&name=node-a", nil); status(err) != 422 {
		t.Errorf("name and tag_name together: %v", err)
	}
}

// Tags: create (again: still 201), tag and untag droplets; with TagLag a
// new droplet's tags apply once it is active.
func TestTags(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	sim, c, _ := start(t, dosim.Options{TagLag: true, BootDuration: time.Minute, Now: clk.now})
	ctx := context.Background()
	d, _, err := c.Droplets.Create(ctx, createReq(t, c, "lag", "old-uid"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tags) != 0 {
		t.Errorf("tags applied at once with TagLag: %v", d.Tags)
	}
	if list, _, _ := c.Droplets.ListByTag(ctx, "old-uid", nil); len(list) != 0 {
		t.Errorf("a new droplet is listed by its pending tag: %+v", list)
	}
	clk.t = clk.t.Add(time.Minute)
	if list, _, _ := c.Droplets.ListByTag(ctx, "old-uid", nil); len(list) != 1 {
		t.Fatalf("the active droplet is not listed by its tag: %+v", list)
	}
	for range 2 {
		if tag, resp, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: "new-uid"}); err != nil || resp.StatusCode != 201 || tag.Name != "new-uid" {
			t.Fatalf("create tag: %+v %v", tag, err)
		}
	}
	res := &godo.TagResourcesRequest{Resources: []godo.Resource{{ID: strconv.Itoa(d.ID), Type: godo.DropletResourceType}}}
	if _, err := c.Tags.TagResources(ctx, "new-uid", res); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tags.UntagResources(ctx, "old-uid", &godo.UntagResourcesRequest{Resources: res.Resources}); err != nil {
		t.Fatal(err)
	}
	if got := sim.Droplets()[0].Tags; strings.Join(got, ",") != "new-uid" {
		t.Errorf("tags after the move: %v", got)
	}
	if tag, _, err := c.Tags.Get(ctx, "new-uid"); err != nil || tag.Resources.Count != 1 {
		t.Errorf("tag new-uid: %+v %v", tag, err)
	}
	if _, err := c.Tags.TagResources(ctx, "never-made", res); status(err) != 404 {
		t.Errorf("tagging with a missing tag: %v", err)
	}
	if _, _, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: "no spaces"}); status(err) != 422 {
		t.Errorf("invalid tag name: %v", err)
	}
	missing := &godo.TagResourcesRequest{Resources: []godo.Resource{{ID: "1", Type: godo.DropletResourceType}}}
	if _, err := c.Tags.TagResources(ctx, "new-uid", missing); status(err) != 404 {
		t.Errorf("tagging a missing droplet: %v", err)
	}
	if strings.Join(sim.Tags(), ",") != "new-uid,old-uid" {
		t.Errorf("Tags() = %v", sim.Tags())
	}
}
