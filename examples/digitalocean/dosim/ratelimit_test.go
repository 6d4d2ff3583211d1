package dosim_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
)

// Every answer carries the hourly budget's RateLimit-* headers; a spent
// budget, or a burst of more than BurstLimit requests a minute, is a 429
// with Retry-After.
func TestRateLimits(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	sim, c, _ := start(t, dosim.Options{Now: clk.now, HourlyLimit: 100, BurstLimit: 3})
	ctx := context.Background()
	for i := range 3 {
		_, resp, err := c.Regions.List(ctx, nil)
		if err != nil || resp.Rate.Limit != 100 || resp.Rate.Remaining != 99-i || !resp.Rate.Reset.Time.Equal(clk.t.Add(time.Hour)) {
			t.Fatalf("request %d: rate %+v, %v", i, resp.Rate, err)
		}
	}
	clk.t = clk.t.Add(20 * time.Second)
	_, _, err := c.Regions.List(ctx, nil)
	var er *godo.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 429 || er.Response.Header.Get("Retry-After") != "40" {
		t.Fatalf("burst: %v", err)
	}
	clk.t = clk.t.Add(40 * time.Second)
	if _, _, err := c.Regions.List(ctx, nil); err != nil {
		t.Fatalf("after the burst window: %v", err)
	}
	sim.SetRateLimitRemaining(0)
	_, resp, err := c.Regions.List(ctx, nil)
	if !errors.As(err, &er) || resp.Rate.Remaining != 0 || er.Response.Header.Get("Retry-After") != strconv.Itoa(3600-60) {
		t.Fatalf("hourly budget spent: %v %+v", err, resp.Rate)
	}
	clk.t = clk.t.Add(time.Hour)
	if _, _, err := c.Regions.List(ctx, nil); err != nil {
		t.Fatalf("in the next hour: %v", err)
	}
}

// A fault answers in place of the API, or after it (the request took
// effect), for as many requests as asked.
func TestFaults(t *testing.T) {
	sim, c, _ := start(t, dosim.Options{})
	ctx := context.Background()
	sim.Inject(dosim.Fault{Method: "GET", Path: "/v2/regions", Status: 503, Times: 2})
	sim.Inject(dosim.Fault{Method: "POST", Path: "/v2/account/keys", Status: 500, After: true})
	sim.Inject(dosim.Fault{Path: "/v2/sizes*", Status: 429, RetryAfter: 7})
	for range 2 {
		if _, _, err := c.Regions.List(ctx, nil); status(err) != 503 {
			t.Fatalf("faulted regions: %v", err)
		}
	}
	if _, _, err := c.Regions.List(ctx, nil); err != nil {
		t.Fatalf("after the fault's times: %v", err)
	}
	if _, _, err := c.Keys.Create(ctx, &godo.KeyCreateRequest{Name: "k", PublicKey: pubKey(t)}); status(err) != 500 {
		t.Fatalf("after-fault: %v", err)
	}
	if n := len(sim.SSHKeys()); n != 1 {
		t.Errorf("an After fault's request took no effect: %d keys", n)
	}
	_, resp, err := c.Sizes.List(ctx, nil)
	if status(err) != 429 || resp.Header.Get("Retry-After") != "7" || resp.Header.Get("RateLimit-Limit") == "" {
		t.Errorf("429 fault: %v %v", err, resp.Header)
	}
	var faulted int
	for _, r := range sim.Requests() {
		if r.Faulted {
			faulted++
		}
	}
	if faulted != 4 {
		t.Errorf("%d faulted requests recorded, want 4: %v", faulted, sim.Requests())
	}
}
