// Command digitalocean is machine-controller's DigitalOcean provider as a
// wasmprov guest, on DigitalOcean's own Go SDK, github.com/digitalocean/godo,
// unmodified: godo and golang.org/x/oauth2 send their requests through
// net/http's default transport, which the guest SDK's hosthttp package
// replaces on wasip1 with the host's policy-checked HTTP. It is a module of
// its own so that godo never enters wasmprov's go.mod. See README.md.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o digitalocean.wasm .
package main

import (
	"github.com/wasmprov/wasmprov/examples/digitalocean/doprovider"

	// Linking hosthttp makes its transport http.DefaultTransport, the one
	// oauth2.NewClient's client (and so godo) uses.
	_ "github.com/wasmprov/wasmprov/guests/go/hosthttp"
)

func init() { doprovider.Register() }

func main() {}
