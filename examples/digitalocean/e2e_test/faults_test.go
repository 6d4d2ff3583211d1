//go:build !wasip1

package e2e

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/examples/digitalocean/doprovider"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/runtime"
)

// A Create whose droplet was made but whose answer was lost (a 500 after
// the API acted) fails transiently; the next Create finds the droplet by
// its UID tag and makes no second one.
func TestCreateInterruptedAfterTheDropletExists(t *testing.T) {
	f := newFixture(t, dosim.Options{})
	m := f.machine("lost", nil)
	f.sim.Inject(dosim.Fault{Method: "POST", Path: "/v2/droplets", Status: 500, After: true})
	_, err := f.p.Create(f.ctx, m, f.data(), "")
	expectRetry(t, err, 5*time.Second, 5*time.Second)
	if n := len(f.sim.Droplets()); n != 1 {
		t.Fatalf("%d droplets after the interrupted Create", n)
	}
	if keys := f.sim.SSHKeys(); len(keys) != 0 {
		t.Errorf("the interrupted Create left its key: %+v", keys)
	}
	inst, err := f.p.Create(f.ctx, f.fresh(m), f.data(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.sim.Droplets(); len(d) != 1 || inst.ID() != strconv.Itoa(d[0].ID) {
		t.Fatalf("the retried Create returned %s; droplets %+v", inst.ID(), d)
	}
	if done, err := f.p.Cleanup(f.ctx, f.fresh(m), f.data()); err != nil || !done {
		t.Fatalf("Cleanup = %v %v", done, err)
	}
}

// DigitalOcean applies a new droplet's tags once it runs (upstream polls
// for them); until then Get and Create find it by the ID Create recorded
// on the Machine, and Delete deletes it.
func TestTagLag(t *testing.T) {
	f := newFixture(t, dosim.Options{TagLag: true, BootDuration: time.Hour})
	m := f.machine("lag", nil)
	inst, err := f.p.Create(f.ctx, m, f.data(), "")
	if err != nil {
		t.Fatal(err)
	}
	if tags := f.sim.Droplets()[0].Tags; len(tags) != 0 {
		t.Fatalf("tags applied at once: %v", tags)
	}
	stored := f.fresh(m)
	got, err := f.p.Get(f.ctx, stored, nil)
	if err != nil || got.ID() != inst.ID() || got.Status() != instance.StatusCreating {
		t.Fatalf("Get of the new droplet: %v %v", got, err)
	}
	if again, err := f.p.Create(f.ctx, stored, f.data(), ""); err != nil || again.ID() != inst.ID() || len(f.sim.Droplets()) != 1 {
		t.Fatalf("a second Create: %v %v, %d droplets", again, err, len(f.sim.Droplets()))
	}
	// Without the annotation the untagged droplet cannot be found: that
	// is what the annotation is for.
	bare := stored.DeepCopy()
	delete(bare.Annotations, doprovider.DropletIDAnnotation)
	_, err = f.p.Get(f.ctx, bare, nil)
	expectClass(t, err, runtime.ClassNotFound)
	if done, err := f.p.Cleanup(f.ctx, stored, f.data()); err != nil || !done {
		t.Fatalf("Cleanup = %v %v", done, err)
	}
}

// With the API unreachable (nothing listens where the alias points) every
// method that calls it fails with a plain retriable error: godo returns no
// response, and the provider never reads one.
func TestUnreachableAPI(t *testing.T) {
	e := getEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	p, err := e.rt.Load(context.Background(), e.wasm, runtime.WithPolicy(policy(closed)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	f := newFixture(t, dosim.Options{})
	m := f.machine("offline", nil)
	_, err = p.Create(f.ctx, m, f.data(), "")
	expectClass(t, err, runtime.ClassTransient)
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("Create's error does not say the connection was refused: %v", err)
	}
	expectClass(t, p.Validate(f.ctx, m.Spec, nil), runtime.ClassTransient)
	_, err = p.Get(f.ctx, m, nil)
	expectClass(t, err, runtime.ClassTransient)
	_, err = p.Cleanup(f.ctx, m, f.data())
	expectClass(t, err, runtime.ClassTransient)
	expectClass(t, p.MigrateUID(f.ctx, m, "0e2e0000-0000-4000-8000-000000000001", nil), runtime.ClassTransient)
}

// The API's refusals keep their class: 401 and 403 are terminal, 429 and
// 5xx transient with a retry hint from the answer.
func TestAPIErrors(t *testing.T) {
	f := newFixture(t, dosim.Options{})
	m := f.machine("errors", nil)
	_, err := f.p.Get(f.ctx, f.machine("wrong-token", map[string]any{"token": map[string]any{
		"secretKeyRef": map[string]any{"namespace": namespace, "name": wrongSecret, "key": "token"}}}), nil)
	expectInvalidConfiguration(t, err)
	if !strings.Contains(err.Error(), "invalid credentials") {
		t.Errorf("401: %v", err)
	}
	f.sim.Inject(dosim.Fault{Path: "/v2/droplets", Status: 403})
	_, err = f.p.Get(f.ctx, m, nil)
	expectInvalidConfiguration(t, err)

	f.sim.Inject(dosim.Fault{Path: "/v2/droplets", Status: 429, RetryAfter: 7})
	_, err = f.p.Get(f.ctx, m, nil)
	expectRetry(t, err, 7*time.Second, 7*time.Second)
	f.sim.Inject(dosim.Fault{Path: "/v2/droplets", Status: 502})
	_, err = f.p.Get(f.ctx, m, nil)
	expectRetry(t, err, 5*time.Second, 5*time.Second)
	f.sim.Inject(dosim.Fault{Path: "/v2/droplets", Status: 503, RetryAfter: 30})
	_, err = f.p.Get(f.ctx, m, nil)
	expectRetry(t, err, 30*time.Second, 30*time.Second)

	// The hourly budget spent: the real API's 429 (with Retry-After until
	// the window ends).
	f.sim.SetRateLimitRemaining(0)
	_, err = f.p.Get(f.ctx, m, nil)
	expectRetry(t, err, 50*time.Minute, time.Hour)
	// A 404 or 422 outside a lookup is retried, as upstream.
	f.sim.SetRateLimitRemaining(100)
	f.sim.Inject(dosim.Fault{Path: "/v2/droplets", Status: 422})
	_, err = f.p.Get(f.ctx, m, nil)
	expectClass(t, err, runtime.ClassTransient)
}

// Listings follow links.pages: with two items a page, Validate finds the
// last region and size, and Delete deletes every droplet with the UID tag.
func TestPagination(t *testing.T) {
	f := newFixture(t, dosim.Options{MaxPerPage: 2})
	m := f.machine("pages", map[string]any{"region": "tor1", "size": "gpu-h100x1-80gb"})
	if err := f.p.Validate(f.ctx, m.Spec, nil); err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, r := range f.sim.Requests() {
		if r.Path == "/v2/regions" {
			pages++
		}
	}
	if pages != 6 {
		t.Errorf("Validate read %d pages of regions, want 6 (12 regions, 2 a page)", pages)
	}
	// Three droplets carry the UID (made behind the provider's back).
	c := godo.NewClient(oauth2.NewClient(f.ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: simToken})))
	c.BaseURL, _ = url.Parse(f.srv.URL + "/")
	for i := range 3 {
		if _, _, err := c.Droplets.Create(f.ctx, &godo.DropletCreateRequest{Name: m.Spec.Name + "-" + strconv.Itoa(i),
			Region: "tor1", Size: "s-1vcpu-1gb", Image: godo.DropletCreateImage{Slug: "ubuntu-24-04-x64"}, Tags: []string{string(m.UID)}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.sim.Droplets()); n != 3 {
		t.Fatalf("%d droplets, want 3", n)
	}
	if done, err := f.p.Cleanup(f.ctx, m, nil); err != nil || !done {
		t.Fatalf("Cleanup = %v %v", done, err)
	}
}
