//go:build wasip1

// Command probe is the benchprov wasmprov guest plus extra exports that run
// pieces of a Validate call, so the benchmarks can tell where a guest call's
// time goes (see BenchmarkGuestPieces). It is never loaded by the runtime.
package main

import (
	"encoding/json"
	"unsafe"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/bench/benchprov"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type benchProvider struct{ provider.Provider }

func init() { provider.Register(benchProvider{}) }

func main() {}

//go:wasmimport wasmprov_v1 input
func hostInput(part int32, buf unsafe.Pointer, limit int32) int64

var scratch = make([]byte, 16<<10)

func input(part abi.Input) []byte {
	n := hostInput(int32(part), unsafe.Pointer(&scratch[0]), int32(len(scratch)))
	if n < 0 || int(n) > len(scratch) {
		panic("input")
	}
	return scratch[:n]
}

// probe_nothing: the export call alone.
//
//go:wasmexport probe_nothing
func probeNothing() int32 { return 0 }

// probe_input_spec: pull the MachineSpec (the host encodes it) and copy it
// as the SDK does.
//
//go:wasmexport probe_input_spec
func probeInputSpec() int32 {
	b := append([]byte(nil), input(abi.InputSpec)...)
	return int32(len(b) & 0)
}

// probe_decode_spec: pull and decode the MachineSpec into the SDK's type,
// which is what the SDK does before calling Validate.
//
//go:wasmexport probe_decode_spec
func probeDecodeSpec() int32 {
	var s provider.MachineSpec
	if err := json.Unmarshal(input(abi.InputSpec), &s); err != nil {
		return 1
	}
	return 0
}

// probe_validate_sdk: what the SDK's Validate does end to end with
// benchprov (decode the spec, then the provider spec).
//
//go:wasmexport probe_validate_sdk
func probeValidateSDK() int32 {
	var s provider.MachineSpec
	if err := json.Unmarshal(input(abi.InputSpec), &s); err != nil {
		return 1
	}
	if benchprov.Validate(s.ProviderSpec.Value) != nil {
		return 1
	}
	return 0
}

// probe_validate_raw: pull only spec.providerSpec.value (raw, never
// re-encoded by the host) and validate it: the lazy path.
//
//go:wasmexport probe_validate_raw
func probeValidateRaw() int32 {
	if benchprov.Validate(input(abi.InputProviderSpec)) != nil {
		return 1
	}
	return 0
}

// probe_provider_decode: only benchprov.Validate's decoding on bytes
// already in the guest (no host call).
//
//go:wasmexport probe_provider_decode
func probeProviderDecode() int32 {
	if benchprov.Validate(providerSpec) != nil {
		return 1
	}
	return 0
}

var providerSpec []byte

//go:wasmexport probe_load_provider_spec
func probeLoad() int32 {
	providerSpec = append([]byte(nil), input(abi.InputProviderSpec)...)
	return 0
}
