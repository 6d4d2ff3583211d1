package mmapmem

import (
	"context"
	_ "embed"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

//go:embed testdata/grow.wasm
var growWasm []byte

// countingAllocator counts the memories it hands out and frees.
type countingAllocator struct {
	inner         experimental.MemoryAllocator
	allocs, frees atomic.Int32
	mu            sync.Mutex
	cap, max      uint64
	last          experimental.LinearMemory
}

func (c *countingAllocator) Allocate(cap, max uint64) experimental.LinearMemory {
	c.allocs.Add(1)
	lm := c.inner.Allocate(cap, max)
	c.mu.Lock()
	c.cap, c.max, c.last = cap, max, lm
	c.mu.Unlock()
	return &countingMemory{LinearMemory: lm, c: c}
}

type countingMemory struct {
	experimental.LinearMemory
	c *countingAllocator
}

func (m *countingMemory) Free() {
	m.c.frees.Add(1)
	m.LinearMemory.Free()
}

// Every instance gets a memory of its own and frees it; a module whose
// instantiation fails frees its memory too.
func TestWazeroManyInstances(t *testing.T) {
	ctx := context.Background()
	wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(16))
	defer wr.Close(ctx)
	compiled, err := wr.CompileModule(ctx, growWasm)
	if err != nil {
		t.Fatal(err)
	}
	alloc := &countingAllocator{inner: New()}
	ictx := experimental.WithMemoryAllocator(ctx, alloc)
	var mods []api.Module
	bases := map[uintptr]bool{}
	for i := range 10 {
		mod, err := wr.InstantiateModule(ictx, compiled, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, mod)
		if _, err := mod.ExportedFunction("grow").Call(ctx, uint64(i)); err != nil {
			t.Fatal(err)
		}
		mod.Memory().WriteUint32Le(0, uint32(i))
		b, _ := mod.Memory().Read(0, 1)
		bases[uintptr(unsafe.Pointer(&b[0]))] = true
	}
	if len(bases) != 10 {
		t.Fatalf("%d distinct memories for 10 instances", len(bases))
	}
	for i, mod := range mods {
		if v, _ := mod.Memory().ReadUint32Le(0); v != uint32(i) {
			t.Fatalf("instance %d reads %d", i, v)
		}
	}
	// An instantiation that fails after the memory exists (here the start
	// function cannot be called) frees it.
	if _, err := wr.InstantiateModule(ictx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("load")); err == nil {
		t.Fatal("calling load without its argument as the start function succeeded")
	}
	if a, f := alloc.allocs.Load(), alloc.frees.Load(); a != 11 || f != 1 {
		t.Fatalf("after a failed instantiation: %d allocations, %d frees, want 11 and 1", a, f)
	}
	// Closing the runtime closes the instances it still has.
	if err := wr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if a, f := alloc.allocs.Load(), alloc.frees.Load(); a != 11 || f != 11 {
		t.Fatalf("%d allocations, %d frees, want 11 and 11", a, f)
	}
}
