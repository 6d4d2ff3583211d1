// Package randprobe is the module the conformance check
// sandbox.random-per-instance runs on the runtime of a run: its
// MachineMetricsLabels answers {"size": "<16 random bytes in hex>"} from
// WASI random_get (probe.wat; the Makefile's fixtures target assembles
// probe.wasm and internal/fixtures checks it matches).
package randprobe

import _ "embed"

// Wasm is probe.wasm.
//
//go:embed probe.wasm
var Wasm []byte
