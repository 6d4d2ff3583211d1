//go:build !linux && !darwin

package mmapmem

import "github.com/tetratelabs/wazero/experimental"

// supported is false: New returns nil and Allocate falls back to heap memory.
const supported = false

func allocateMapped(cap, max uint64, im *Image) (experimental.LinearMemory, bool) { return nil, false }
