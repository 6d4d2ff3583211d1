// Command httpguest is a test guest for the SDK's HTTP paths: its Validate
// sends requests through provider.DoHTTP, through a hosthttp client and
// through http.DefaultClient, and checks every part of the answers (status, repeated headers, binary
// and large bodies, a policy refusal), returning what differs as an
// InvalidConfiguration. runtime/http_sdk_test.go builds and drives it.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o httpguest.wasm .
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/hosthttp"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type guest struct{}

func init() { provider.Register(guest{}, provider.Needs(abi.CapHTTP)) }

func main() {}

// BigBody is the body the test server sends for /big: past the SDK's
// 16 KiB first-try buffer, so the result comes through take_result.
func bigBody() []byte { return bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16) }

func (guest) Validate(ctx context.Context, s provider.MachineSpec) error {
	var cfg struct {
		Endpoint string `json:"endpoint"`
	}
	if err := json.Unmarshal(s.ProviderSpec.Value, &cfg); err != nil {
		return provider.Terminal(provider.InvalidConfiguration, "spec: %v", err)
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// provider.DoHTTP: method, repeated headers and a binary body out;
	// status, repeated headers and the body back.
	body := []byte("hello\x00world\xff")
	resp, err := provider.DoHTTP(ctx, provider.HTTPRequest{Method: "PUT", URL: cfg.Endpoint + "/echo?x=1",
		Header: map[string][]string{"X-Multi": {"a", "b"}}, Body: body})
	switch {
	case err != nil:
		fail("DoHTTP: %v", err)
	case resp.Status != 201:
		fail("DoHTTP: status %d, want 201", resp.Status)
	case strings.Join(resp.Header["X-Seen"], "|") != "PUT /echo?x=1 a,b":
		fail("DoHTTP: X-Seen %q", resp.Header["X-Seen"])
	case strings.Join(resp.Header["X-Two"], "|") != "1|2":
		fail("DoHTTP: X-Two %q, want both values", resp.Header["X-Two"])
	case !bytes.Equal(resp.Body, body):
		fail("DoHTTP: body %q, want %q", resp.Body, body)
	}

	// hosthttp: a plain *http.Client, a large answer.
	c := hosthttp.Client()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Endpoint+"/big", nil)
	if r, err := c.Do(req); err != nil {
		fail("hosthttp: %v", err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/octet-stream" || !bytes.Equal(b, bigBody()) {
			fail("hosthttp: status %d, type %q, %d bytes of body (want %d)", r.StatusCode, r.Header.Get("Content-Type"), len(b), len(bigBody()))
		}
	}

	// http.DefaultClient, as an SDK that makes no client of its own uses
	// it (oauth2.NewClient, godo.NewFromToken): the sandbox has no
	// sockets, and linking hosthttp made its Transport the default.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, cfg.Endpoint+"/big", nil)
	if r, err := http.DefaultClient.Do(req); err != nil {
		fail("http.DefaultClient: %v", err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !bytes.Equal(b, bigBody()) {
			fail("http.DefaultClient: status %d, %d bytes of body (want %d)", r.StatusCode, len(b), len(bigBody()))
		}
	}

	// A host the policy does not allow: DENIED, from the function the SDK
	// sent the request through.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "https://forbidden.example/", nil)
	_, err = c.Do(req)
	var he *provider.HostError
	if !errors.As(err, &he) || he.Errno != abi.ErrnoDenied {
		fail("forbidden host: %v, want a DENIED host error", err)
	} else if he.Func != abi.ImportHTTPBin {
		fail("forbidden host: refused by %s, want %s", he.Func, abi.ImportHTTPBin)
	}

	if len(problems) > 0 {
		return provider.Terminal(provider.InvalidConfiguration, "%s", strings.Join(problems, "; "))
	}
	return nil
}

func (guest) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

func (guest) Get(context.Context, *provider.Machine) (*provider.Instance, error) {
	return nil, provider.ErrInstanceNotFound
}

func (guest) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (guest) Create(context.Context, *provider.Machine, string) (*provider.Instance, error) {
	return nil, errors.New("not implemented")
}

func (guest) Delete(context.Context, *provider.Machine) error { return nil }

func (guest) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return nil, nil
}

func (guest) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
