package dosim_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
)

// The simulator is checked with DigitalOcean's own SDK: what godo decodes
// is what a provider sees.

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func start(t *testing.T, opts dosim.Options) (*dosim.Sim, *godo.Client, *httptest.Server) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = "tok"
	}
	sim := dosim.New(opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, client(t, srv.URL, opts.Token), srv
}

func client(t *testing.T, base, token string) *godo.Client {
	t.Helper()
	c := godo.NewClient(oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})))
	u, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func status(err error) int {
	var er *godo.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	return 0
}

func pubKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	blob := binary.BigEndian.AppendUint32(nil, 11)
	blob = append(blob, "ssh-ed25519"...)
	blob = binary.BigEndian.AppendUint32(blob, uint32(len(pub)))
	blob = append(blob, pub...)
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(blob) + " test"
}

func TestAuthAndErrorObject(t *testing.T) {
	_, _, srv := start(t, dosim.Options{})
	for _, auth := range []string{"", "Bearer wrong", "tok"} {
		req, _ := http.NewRequest("GET", srv.URL+"/v2/regions", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != 401 || body["id"] != "Unauthorized" ||
			body["message"] != "Unable to authenticate you" || body["request_id"] == "" {
			t.Errorf("Authorization %q: %d %s", auth, resp.StatusCode, b)
		}
	}
	_, _, err := client(t, srv.URL, "wrong").Regions.List(context.Background(), nil)
	if status(err) != 401 || !strings.Contains(err.Error(), "Unable to authenticate you") {
		t.Errorf("godo with a wrong token: %v", err)
	}
	_, _, err = client(t, srv.URL, "tok").Images.GetBySlug(context.Background(), "windows-11")
	var er *godo.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 404 || er.Message != "The resource you were accessing could not be found." {
		t.Errorf("unknown image: %v", err)
	}
}

// Listings are paginated: links.pages leads through every page and
// meta.total counts them all.
func TestPagination(t *testing.T) {
	_, c, _ := start(t, dosim.Options{})
	ctx := context.Background()
	var slugs []string
	opt := &godo.ListOptions{PerPage: 5}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("links never end")
		}
		regions, resp, err := c.Regions.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 12 {
			t.Fatalf("meta = %+v, want total 12", resp.Meta)
		}
		for _, r := range regions {
			slugs = append(slugs, r.Slug)
		}
		if resp.Links.IsLastPage() {
			break
		}
		cur, err := resp.Links.CurrentPage()
		if err != nil || cur != opt.Page+boolInt(opt.Page == 0) {
			t.Fatalf("current page %d (%v) on request for page %d", cur, err, opt.Page)
		}
		opt.Page = cur + 1
	}
	if strings.Join(slugs, ",") != "nyc1,nyc3,sfo2,sfo3,ams3,sgp1,lon1,fra1,tor1,blr1,syd1,atl1" {
		t.Errorf("regions across pages: %v", slugs)
	}
	// A single page has no pages link; per_page is capped at MaxPerPage.
	_, resp, err := c.Sizes.List(ctx, &godo.ListOptions{PerPage: 1000})
	if err != nil || resp.Links == nil || resp.Links.Pages != nil {
		t.Errorf("one page of sizes: %+v %v", resp.Links, err)
	}
	_, c2, _ := start(t, dosim.Options{MaxPerPage: 2})
	sizes, resp, err := c2.Sizes.List(ctx, &godo.ListOptions{PerPage: 200})
	if err != nil || len(sizes) != 2 || resp.Links.IsLastPage() || !strings.Contains(resp.Links.Pages.Next, "https://api.digitalocean.com/v2/sizes?") {
		t.Errorf("MaxPerPage 2: %d sizes, links %+v, %v", len(sizes), resp.Links, err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCatalogue(t *testing.T) {
	_, c, _ := start(t, dosim.Options{})
	ctx := context.Background()
	sizes, _, err := c.Sizes.List(ctx, &godo.ListOptions{PerPage: 200})
	if err != nil {
		t.Fatal(err)
	}
	bySlug := map[string]godo.Size{}
	for _, s := range sizes {
		bySlug[s.Slug] = s
	}
	if s := bySlug["s-1vcpu-2gb"]; !s.Available || len(s.Regions) != 11 || s.Memory != 2048 {
		t.Errorf("s-1vcpu-2gb = %+v", s)
	}
	if bySlug["2gb"].Available {
		t.Error("the retired 2gb is available")
	}
	if g := bySlug["gpu-h100x1-80gb"]; strings.Join(g.Regions, ",") != "nyc3,tor1" {
		t.Errorf("the GPU size is offered in %v", g.Regions)
	}
	img, _, err := c.Images.GetBySlug(ctx, "ubuntu-24-04-x64")
	if err != nil || img.Distribution != "Ubuntu" || !img.Public {
		t.Errorf("ubuntu-24-04-x64: %+v %v", img, err)
	}
	if byID, _, err := c.Images.GetByID(ctx, img.ID); err != nil || byID.Slug != img.Slug {
		t.Errorf("image by ID: %+v %v", byID, err)
	}
}

func TestSSHKeys(t *testing.T) {
	sim, c, _ := start(t, dosim.Options{})
	ctx := context.Background()
	pub := pubKey(t)
	k, _, err := c.Keys.Create(ctx, &godo.KeyCreateRequest{Name: "k1", PublicKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := dosim.Fingerprint(pub)
	if k.ID == 0 || k.Fingerprint != fp || len(strings.Split(fp, ":")) != 16 {
		t.Fatalf("created %+v, fingerprint %q", k, fp)
	}
	if got, _, err := c.Keys.GetByFingerprint(ctx, fp); err != nil || got.ID != k.ID {
		t.Errorf("get by fingerprint: %+v %v", got, err)
	}
	for _, bad := range []godo.KeyCreateRequest{{Name: "dup", PublicKey: pub}, {Name: "x", PublicKey: "ssh-ed25519 !!!"},
		{Name: "x", PublicKey: "ssh-dss AAAA"}, {Name: "", PublicKey: pubKey(t)}} {
		if _, _, err := c.Keys.Create(ctx, &bad); status(err) != 422 {
			t.Errorf("create %+v: %v, want 422", bad, err)
		}
	}
	if _, err := c.Keys.DeleteByFingerprint(ctx, fp); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Keys.DeleteByID(ctx, k.ID); status(err) != 404 {
		t.Errorf("second delete: %v", err)
	}
	if n := len(sim.SSHKeys()); n != 0 {
		t.Errorf("%d keys left", n)
	}
}
