// Command hostcalls is an example provider that uses every wasmprov host
// function — log, http_do, machine_update, pv_list, config_var — against a
// small JSON "cloud" API (see hostcallsprovider). wasmprov's tests run it
// against a loopback server to prove each host function end to end.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hostcalls.wasm .
package main

import (
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/examples/hostcalls/hostcallsprovider"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

func init() {
	provider.Register(hostcallsprovider.Provider{},
		provider.Needs(abi.CapHTTP, abi.CapMachineUpdate, abi.CapPVList, abi.CapConfigVar))
}

func main() {}
