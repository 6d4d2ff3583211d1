//go:build wasmtime

package contenders

import (
	"context"

	"github.com/wasmprov/wasmprov/runtime"
)

// The wasmtime contender: the wasmprov contender with defaults
// (interruptible guests) on the runtime's wasmtime engine. Built only with
// -tags wasmtime (cgo; the runtime's engine needs the same tag).
func init() {
	newWasmtime = func(ctx context.Context, o Options) (Contender, error) {
		return newWasmprov(ctx, o, runtime.WithEngine(runtime.EngineWasmtime), runtime.WithInterruptibleGuests(true))
	}
	hostTags = append(hostTags, "wasmtime")
}
