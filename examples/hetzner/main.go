// Command hetzner is machine-controller's Hetzner Cloud provider as a
// wasmprov guest, built on the standard library only (encoding/json and
// net/http over the host's HTTP). See README.md.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hetzner.wasm .
package main

import (
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzrest"
	"github.com/wasmprov/wasmprov/guests/go/hosthttp"
)

func init() { hzprovider.Register(hzrest.New(hosthttp.Client)) }

func main() {}
