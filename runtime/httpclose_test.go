package runtime_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/examples/hostcalls/hostcallsprovider"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/native"
)

// Closing a provider drops the idle connections its http_do kept alive: a
// replaced version must not hold connections to the cloud's API open until
// the server times them out. Until then the version's calls share them:
// its transport is built once, at load.
func TestProviderCloseDropsIdleConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(t *testing.T, rt *runtime.Runtime, policy runtime.Policy) (*runtime.Provider, error)
	}{
		{"native", func(_ *testing.T, rt *runtime.Runtime, policy runtime.Policy) (*runtime.Provider, error) {
			return native.Load(rt, "hostcalls", hostcallsprovider.Provider{}, abi.CapHTTP|abi.CapConfigVar,
				runtime.WithPolicy(policy))
		}},
		{"wasm", func(t *testing.T, rt *runtime.Runtime, policy runtime.Policy) (*runtime.Provider, error) {
			return rt.Load(context.Background(), testguest.Build(t, "examples/hostcalls"), runtime.WithPolicy(policy))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opened, closed atomic.Int64
			closedEv := make(chan struct{}, 1) // a connection closed
			c := &fakeCloud{token: "s3cret", instances: map[string]map[string]any{}}
			c.srv = httptest.NewUnstartedServer(http.HandlerFunc(c.serve))
			c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					opened.Add(1)
				case http.StateClosed, http.StateHijacked:
					closed.Add(1)
					select {
					case closedEv <- struct{}{}:
					default:
					}
				}
			}
			c.srv.Start()
			t.Cleanup(c.srv.Close)

			rt := newRuntime(t)
			p, err := tc.load(t, rt, runtime.Policy{AllowedHosts: []string{c.host()}, AllowInsecureHTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			m := newMachine("worker-1", "u-1", hostcallsSpec(c.srv.URL, "s3cret"))
			for range 2 {
				if err := p.Validate(context.Background(), m.Spec, nil); err != nil {
					t.Fatal(err)
				}
			}
			if opened.Load() != 1 || closed.Load() != 0 {
				t.Fatalf("after two Validates: %d connections opened, %d closed; want 1 kept alive and shared",
					opened.Load(), closed.Load())
			}
			if err := p.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The one connection, far below the transport's idle timeout
			// (90 s): Close closed it.
			select {
			case <-closedEv:
			case <-time.After(5 * time.Second):
				t.Fatalf("5 s after Close: %d connections opened, %d closed", opened.Load(), closed.Load())
			}
		})
	}
}
