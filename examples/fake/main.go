// Command fake is machine-controller's fake cloud provider as a wasmprov
// guest; the provider itself is package fakeprovider, so tests can run the
// same code natively.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fake.wasm .
package main

import (
	"github.com/wasmprov/wasmprov/examples/fake/fakeprovider"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

func init() { provider.Register(fakeprovider.Provider{}) }

func main() {}
