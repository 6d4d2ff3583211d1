package memimage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/internal/memimage"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Module building, just enough for memories and data.

func uleb(v uint64) []byte { return wasmbin.AppendUint64(nil, v) }

func sleb(v int64) []byte { return wasmbin.AppendInt64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func section(id byte, entries ...[]byte) []byte {
	body := cat(uleb(uint64(len(entries))), cat(entries...))
	return cat([]byte{id}, uleb(uint64(len(body))), body)
}

func module(sections ...[]byte) []byte {
	return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...))
}

// memory is a memory section entry: flags, min pages (and max with flag 1).
func memory(flags byte, minPages uint64, maxPages ...uint64) []byte {
	b := cat([]byte{flags}, uleb(minPages))
	for _, m := range maxPages {
		b = append(b, uleb(m)...)
	}
	return b
}

// active is an active segment of memory 0 at i32.const off.
func active(off int64, init []byte) []byte {
	return cat([]byte{0x00, wasmbin.OpcodeI32Const}, sleb(off), []byte{wasmbin.OpcodeEnd}, uleb(uint64(len(init))), init)
}

// passive is a passive segment.
func passive(init []byte) []byte { return cat([]byte{0x01}, uleb(uint64(len(init))), init) }

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

const page = 64 << 10

// memoryOf instantiates wasm with wazero, every imported function a host
// function that does nothing and no start function run, and returns its
// memory's bytes.
func memoryOf(t testing.TB, wasm []byte) []byte {
	t.Helper()
	b, err := instantiate(wasm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func instantiate(wasm []byte) ([]byte, error) {
	ctx := context.Background()
	// 16 MiB at most: a fuzzed minimum size must not allocate gigabytes.
	// The interpreter: what instantiation writes to memory does not depend
	// on the engine, and it compiles a Go guest many times faster than the
	// compiler does under the race detector (minutes of make test).
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(256))
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("compiling: %w", err)
	}
	hosts := map[string]wazero.HostModuleBuilder{}
	for _, f := range compiled.ImportedFunctions() {
		modName, name, _ := f.Import()
		if hosts[modName] == nil {
			hosts[modName] = r.NewHostModuleBuilder(modName)
		}
		hosts[modName].NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), f.ParamTypes(), f.ResultTypes()).
			Export(name)
	}
	for _, h := range hosts {
		if _, err := h.Instantiate(ctx); err != nil {
			return nil, err
		}
	}
	mod, err := r.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, fmt.Errorf("instantiating: %w", err)
	}
	mem := mod.Memory()
	if mem == nil {
		return nil, errors.New("no memory")
	}
	b, _ := mem.Read(0, mem.Size())
	return bytes.Clone(b), nil
}

// checkSplit splits wasm and checks that the stripped module writes
// nothing, that the image is the original's memory up to its last byte
// written, and that the memory past it is zero.
func checkSplit(t *testing.T, wasm []byte) (stripped, image []byte) {
	t.Helper()
	orig := bytes.Clone(wasm)
	stripped, image, ok := memimage.Split(wasm)
	if !ok {
		t.Fatal("Split refused a module that qualifies")
	}
	if !bytes.Equal(wasm, orig) {
		t.Fatal("Split changed its input")
	}
	want := memoryOf(t, wasm)
	got := memoryOf(t, stripped)
	if len(got) != len(want) {
		t.Fatalf("stripped memory is %d bytes, the original's %d", len(got), len(want))
	}
	if !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatal("the stripped module still writes data")
	}
	if len(image) > len(want) || !bytes.Equal(image, want[:len(image)]) {
		t.Fatal("the image is not what instantiation writes")
	}
	if !bytes.Equal(want[len(image):], make([]byte, len(want)-len(image))) {
		t.Fatal("the original writes past the image's end")
	}
	if _, _, again := memimage.Split(stripped); again {
		t.Fatal("the stripped module still has data to move")
	}
	return stripped, image
}

func TestSplitImageIsWhatInstantiationWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm []byte
	}{
		{"one segment", module(section(wasmbin.SectionIDMemory, memory(0, 4)),
			section(wasmbin.SectionIDData, active(16, fill(memimage.MinData, 1))))},
		{"overlapping, out of order, the later wins", module(section(wasmbin.SectionIDMemory, memory(1, 4, 8)),
			section(wasmbin.SectionIDData, active(page, fill(page, 3)), active(100, fill(page+50, 5)), active(page+10, fill(20, 9))))},
		{"ending at the minimum size", module(section(wasmbin.SectionIDMemory, memory(0, 2)),
			section(wasmbin.SectionIDData, active(2*page-memimage.MinData, fill(memimage.MinData, 2))))},
		{"passive segments kept", module(section(wasmbin.SectionIDMemory, memory(0, 3)),
			section(wasmbin.SectionIDData, passive(fill(10, 4)), active(0, fill(memimage.MinData, 6)), passive(nil)))},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSplit(t, tc.wasm) })
	}
}

// Segment indices stay what they were: the same number of segments, the
// passive ones byte for byte.
func TestSplitKeepsSegmentIndices(t *testing.T) {
	p1, p2 := passive(fill(10, 4)), passive([]byte("kept"))
	wasm := module(section(wasmbin.SectionIDMemory, memory(0, 3)),
		section(wasmbin.SectionIDData, p1, active(0, fill(memimage.MinData, 6)), p2, active(page, fill(page, 1))))
	stripped, _ := checkSplit(t, wasm)
	if !bytes.Contains(stripped, cat(uleb(4), p1)) || !bytes.Contains(stripped, p2) {
		t.Fatal("the passive segments or the segment count changed")
	}
}

// A Go guest: 100,000 data segments merged by the instrumenter or not, its
// image is what wazero writes.
func TestSplitGoGuest(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	_, image := checkSplit(t, wasm)
	if len(image) < 1<<20 {
		t.Fatalf("image of %d bytes: a Go guest has more data than that", len(image))
	}
	if len(image) > memimage.MaxImage/2 {
		t.Fatalf("image of %d bytes: MaxImage (%d) is meant to hold twice a Go guest's data", len(image), memimage.MaxImage)
	}
}

func TestSplitRefuses(t *testing.T) {
	body := cat(uleb(1), active(0, fill(memimage.MinData, 1)))
	data := cat([]byte{wasmbin.SectionIDData}, uleb(uint64(len(body))), body)
	mem := section(wasmbin.SectionIDMemory, memory(0, 4))
	importedMemory := section(wasmbin.SectionIDImport, cat(uleb(3), []byte("env"), uleb(3), []byte("mem"), []byte{wasmbin.ExternMemory}, memory(0, 4)))
	if _, _, ok := memimage.Split(module(mem, data)); !ok {
		t.Fatal("the module every case changes is refused as it is")
	}
	for _, tc := range []struct {
		name string
		wasm []byte
	}{
		{"not a module", []byte("not wasm")},
		{"truncated", module(mem, data)[:40]},
		{"no memory", module(data)},
		{"no data", module(mem)},
		{"an imported memory", module(importedMemory, data)},
		{"two memories", module(section(wasmbin.SectionIDMemory, memory(0, 4), memory(0, 4)), data)},
		{"a shared memory", module(section(wasmbin.SectionIDMemory, memory(3, 4, 4)), data)},
		{"a 64-bit memory", module(section(wasmbin.SectionIDMemory, memory(4, 4)), data)},
		{"too little data", module(mem, section(wasmbin.SectionIDData, active(0, fill(memimage.MinData-1, 1))))},
		{"past the minimum size", module(mem, section(wasmbin.SectionIDData, active(4*page-memimage.MinData+1, fill(memimage.MinData, 1))))},
		{"an image over MaxImage", module(section(wasmbin.SectionIDMemory, memory(0, memimage.MaxImage/page+1)),
			section(wasmbin.SectionIDData, active(0, fill(memimage.MaxImage+1, 1))))},
		{"too sparse", module(section(wasmbin.SectionIDMemory, memory(0, 64)),
			section(wasmbin.SectionIDData, active(0, fill(memimage.MinData, 1)), active(40*page, []byte{1})))},
		{"an offset from a global", module(mem, section(wasmbin.SectionIDData,
			cat([]byte{0x00, 0x23, 0x00, wasmbin.OpcodeEnd}, uleb(memimage.MinData), fill(memimage.MinData, 1))))},
		{"an extended constant offset", module(mem, section(wasmbin.SectionIDData,
			cat([]byte{0x00, wasmbin.OpcodeI32Const, 0x00, wasmbin.OpcodeI32Const, 0x01, 0x6a, wasmbin.OpcodeEnd}, uleb(memimage.MinData), fill(memimage.MinData, 1))))},
		{"memory 1", module(mem, section(wasmbin.SectionIDData,
			cat([]byte{0x02, 0x01, wasmbin.OpcodeI32Const, 0x00, wasmbin.OpcodeEnd}, uleb(memimage.MinData), fill(memimage.MinData, 1))))},
		{"a negative offset (an address near 4 GiB)", module(mem, section(wasmbin.SectionIDData, active(-page, fill(memimage.MinData, 1))))},
		{"bytes after the segments", module(mem, cat([]byte{wasmbin.SectionIDData}, uleb(uint64(len(body)+1)), body, []byte{0}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if stripped, image, ok := memimage.Split(tc.wasm); ok || stripped != nil || image != nil {
				t.Fatalf("Split = %d bytes, %d of image, %v; want a refusal", len(stripped), len(image), ok)
			}
		})
	}
}
