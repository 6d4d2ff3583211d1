//go:build linux || darwin

package mmapmem

import (
	"context"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// mapped allocates with a new Allocator and insists on an mmap'd memory.
func mapped(t *testing.T, cap, max uint64) *mappedMemory {
	t.Helper()
	if !supported {
		t.Skip("mmap'd memories are not supported on this OS")
	}
	lm := New().Allocate(cap, max)
	m, ok := lm.(*mappedMemory)
	if !ok {
		t.Fatalf("Allocate(%d, %d) = %T, want *mappedMemory", cap, max, lm)
	}
	t.Cleanup(m.Free)
	return m
}

func TestGrowKeepsBaseAndContents(t *testing.T) {
	const max = 16 * wasmPage
	m := mapped(t, wasmPage, max)
	b := m.Reallocate(wasmPage)
	if len(b) != wasmPage || cap(b) != wasmPage {
		t.Fatalf("len %d cap %d, want %d", len(b), cap(b), wasmPage)
	}
	addr := base(b)
	for i := range b {
		b[i] = pattern(i)
	}
	size := uint64(wasmPage)
	for _, grow := range []uint64{1, 2, 5, 7} { // pages: 1 -> 2 -> 4 -> 9 -> 16
		old := size
		size += grow * wasmPage
		b = m.Reallocate(size)
		if uint64(len(b)) != size || uint64(cap(b)) != size {
			t.Fatalf("Reallocate(%d): len %d cap %d", size, len(b), cap(b))
		}
		if got := base(b); got != addr {
			t.Fatalf("Reallocate(%d) moved the memory from %#x to %#x", size, addr, got)
		}
		for i := uint64(0); i < old; i++ {
			if b[i] != pattern(i) {
				t.Fatalf("after growing to %d: byte %d = %#x, want %#x", size, i, b[i], pattern(i))
			}
		}
		for i := old; i < size; i++ {
			if b[i] != 0 {
				t.Fatalf("after growing to %d: new byte %d = %#x, want 0", size, i, b[i])
			}
			b[i] = pattern(i)
		}
	}
	if b := m.Reallocate(max + 1); b != nil {
		t.Fatalf("Reallocate(max+1) = len %d, want nil", len(b))
	}
	// A failed growth leaves the memory as it was.
	if b := m.Reallocate(max); base(b) != addr || len(b) != max || b[max-1] != pattern(max-1) {
		t.Fatal("Reallocate(max) after a refused growth lost the memory")
	}
	m.Free()
	m.Free()
	if b := m.Reallocate(wasmPage); b != nil {
		t.Fatal("Reallocate after Free returned memory")
	}
}

// Sizes need not be multiples of the OS page size (wasm's always are).
func TestUnalignedSizes(t *testing.T) {
	m := mapped(t, 0, 10000)
	if b := m.Reallocate(0); b == nil || len(b) != 0 {
		t.Fatalf("Reallocate(0) = %v, want an empty slice", b)
	}
	b := m.Reallocate(1)
	b[0] = 42
	b = m.Reallocate(10000)
	if b[0] != 42 || b[9999] != 0 {
		t.Fatalf("got %d, %d", b[0], b[9999])
	}
	b[9999] = 1
	if m.Reallocate(10001) != nil {
		t.Fatal("Reallocate beyond max returned memory")
	}
	// Shrinking (which wazero never does) returns a prefix.
	if b := m.Reallocate(5); len(b) != 5 || b[0] != 42 {
		t.Fatalf("Reallocate(5) = %v", b)
	}
}

// wazero reserves up to 4 GiB for a memory with no maximum; that is only
// address space. (Growing it to 4 GiB would make 4 GiB resident: commit
// faults pages in.)
func TestReserveFourGiB(t *testing.T) {
	max := uint64(1) << 32 // a variable: the constant overflows int on 32-bit platforms
	if maxSliceLen < max {
		t.Skip("a 32-bit platform cannot map 4 GiB")
	}
	m := mapped(t, wasmPage, max)
	if uint64(len(m.region)) != max {
		t.Fatalf("reserved %d bytes, want %d", len(m.region), max)
	}
	b := m.Reallocate(256 * wasmPage)
	b[len(b)-1] = 1
	if b = m.Reallocate(1024 * wasmPage); b[256*wasmPage-1] != 1 || b[len(b)-1] != 0 {
		t.Fatal("growing lost or invented contents")
	}
}

// Reallocate and Free may race (a module closed while its guest grows the
// memory); neither may corrupt the state. Run with -race.
func TestConcurrentReallocateAndFree(t *testing.T) {
	for range 20 {
		m := mapped(t, wasmPage, 64*wasmPage)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 16 {
					if b := m.Reallocate(uint64(g*16+i+1) * wasmPage); b != nil && len(b) == 0 {
						t.Error("empty memory")
					}
				}
			})
		}
		wg.Go(m.Free)
		wg.Wait()
		if m.Reallocate(wasmPage) != nil {
			t.Fatal("Reallocate after Free returned memory")
		}
	}
}

// A real wazero module grows its memory and reads and writes across pages;
// the memory is the mmap'd one, never moves, and is freed on Close.
func TestWazeroModule(t *testing.T) {
	if !supported {
		t.Skip("mmap'd memories are not supported on this OS")
	}
	for _, tc := range []struct {
		name       string
		limitPages uint32 // 0: wazero's default, 65536 pages (4 GiB)
	}{{"limit-64-pages", 64}, {"default-limit-4GiB", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limitPages == 0 && maxSliceLen < 1<<32 {
				t.Skip("a 32-bit platform cannot map 4 GiB")
			}
			ctx := context.Background()
			rc := wazero.NewRuntimeConfig()
			maxPages := uint32(65536)
			if tc.limitPages != 0 {
				rc = rc.WithMemoryLimitPages(tc.limitPages)
				maxPages = tc.limitPages
			}
			wr := wazero.NewRuntimeWithConfig(ctx, rc)
			defer wr.Close(ctx)
			compiled, err := wr.CompileModule(ctx, growWasm)
			if err != nil {
				t.Fatal(err)
			}
			alloc := &countingAllocator{inner: New()}
			mod, err := wr.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), compiled, wazero.NewModuleConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			if n := alloc.allocs.Load(); n != 1 {
				t.Fatalf("%d allocations, want 1", n)
			}
			if want := uint64(maxPages) * wasmPage; alloc.max != want || alloc.cap != wasmPage {
				t.Fatalf("Allocate(%d, %d), want (%d, %d)", alloc.cap, alloc.max, wasmPage, want)
			}
			m, ok := alloc.last.(*mappedMemory)
			if !ok {
				t.Fatalf("memory is %T, want *mappedMemory", alloc.last)
			}
			reserved := base(m.region)

			call := func(name string, args ...uint64) uint64 {
				t.Helper()
				res, err := mod.ExportedFunction(name).Call(ctx, args...)
				if err != nil {
					t.Fatalf("%s%v: %v", name, args, err)
				}
				if len(res) == 0 {
					return 0
				}
				return res[0]
			}
			memBase := func() uintptr {
				b, ok := mod.Memory().Read(0, 1)
				if !ok {
					t.Fatal("memory is empty")
				}
				return base(b)
			}
			if got := memBase(); got != reserved {
				t.Fatalf("wazero's memory is at %#x, the reservation at %#x", got, reserved)
			}

			call("store", 0, 0x11223344)
			call("store", wasmPage-4, 0x55667788)
			if got := call("grow", 3); got != 1 {
				t.Fatalf("grow(3) = %d, want 1", got)
			}
			if got := call("size"); got != 4 {
				t.Fatalf("size = %d, want 4", got)
			}
			if got := call("sum", wasmPage, 3*wasmPage); got != 0 {
				t.Fatalf("new pages sum to %d, want 0", got)
			}
			if call("load", 0) != 0x11223344 || call("load", wasmPage-4) != 0x55667788 {
				t.Fatal("growth lost the first page's contents")
			}
			// Writes across page boundaries.
			call("fill", 2*wasmPage-8, 0xab, 16)
			call("store", 3*wasmPage-2, 0x01020304)
			if got := call("sum", wasmPage, 3*wasmPage); got != 16*0xab+1+2+3+4 {
				t.Fatalf("sum = %d", got)
			}
			if got := call("load", 2*wasmPage-2); got != 0xabababab {
				t.Fatalf("load across pages = %#x", got)
			}
			if got := memBase(); got != reserved {
				t.Fatalf("the memory moved from %#x to %#x", reserved, got)
			}

			// Grow to a page short of the limit in steps, use the last word,
			// take the last page; then one more page is refused. Not to 4 GiB,
			// which would make 4 GiB resident (commit faults pages in).
			if tc.limitPages != 0 {
				for size := uint32(4); size < maxPages-1; {
					delta := min(maxPages-1-size, 1000)
					if got := call("grow", uint64(delta)); got != uint64(size) {
						t.Fatalf("grow(%d) = %d, want %d", delta, got, size)
					}
					size += delta
				}
				last := uint64(maxPages-1)*wasmPage - 4
				if call("load", last) != 0 {
					t.Fatal("the last word is not zero")
				}
				call("store", last, 0xdeadbeef)
				if call("load", last) != 0xdeadbeef || call("load", 0) != 0x11223344 {
					t.Fatal("contents lost")
				}
				if _, err := mod.ExportedFunction("load").Call(ctx, last+4); err == nil {
					t.Fatal("a load past the end did not trap")
				}
				if got := call("grow", 1); got != uint64(maxPages-1) {
					t.Fatalf("grow(1) = %d, want %d", got, maxPages-1)
				}
				if got := int32(call("grow", 1)); got != -1 {
					t.Fatalf("grow past the limit = %d, want -1", got)
				}
				if got := memBase(); got != reserved {
					t.Fatalf("the memory moved from %#x to %#x", reserved, got)
				}
			}

			if err := mod.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if n := alloc.frees.Load(); n != 1 {
				t.Fatalf("Free called %d times after Close, want 1", n)
			}
			m.mu.Lock()
			freed := m.region == nil
			m.mu.Unlock()
			if !freed {
				t.Fatal("the reservation is still mapped after Close")
			}
		})
	}
}
