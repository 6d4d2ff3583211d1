package wazeroengine

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
)

func memoryBytes(t *testing.T, inst engine.Instance) []byte {
	t.Helper()
	mem := inst.(*instance).mod.Memory()
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		t.Fatal("reading memory")
	}
	return bytes.Clone(b)
}

// A Go guest on an engine with mapped memory gets its data from a memory
// image, and runs as it does with its data segments: the same memory after
// instantiation and after the Go runtime's initialisation. Instances do
// not see each other's writes; the image's file is closed with the module.
func TestMemoryImage(t *testing.T) {
	a := mmapmem.New()
	if a == nil {
		t.Skip("no mapped memory on this platform")
	}
	if _, err := mmapmem.NewImage([]byte{1}); err != nil {
		t.Skipf("no memory images on this platform: %v", err)
	}
	ctx := context.Background()
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.ModuleConfig{MemoryLimitPages: 1024, Interruptible: true, HostFunctions: hostmodule.Functions()}
	compile := func(opts ...Option) *module {
		// The tests' shared compilation cache: the plain module is the
		// one the runtime's tests compile, and TestMemoryImageUnavailable
		// loads the imaged one from it instead of compiling it again.
		e, err := New(testguest.CompilationCacheDir(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(ctx) })
		m, err := e.Compile(ctx, wasm, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m.(*module)
	}
	instantiate := func(m *module) engine.Instance {
		// A fixed random stream each: the host's crypto/rand would make
		// two Go runtimes initialise differently (map seeds), images or not.
		inst, err := m.Instantiate(ctx, engine.InstanceConfig{Random: rand.New(rand.NewSource(1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Close(ctx) })
		return inst
	}
	plain, imaged := compile(), compile(WithMappedMemory(a))
	if plain.sh.image != nil || imaged.sh.image == nil {
		t.Fatalf("images: plain engine %v, mapped engine %v; want none and one", plain.sh.image != nil, imaged.sh.image != nil)
	}
	want, i1, i2 := instantiate(plain), instantiate(imaged), instantiate(imaged)
	wantMem := memoryBytes(t, want)
	if !bytes.Equal(memoryBytes(t, i1), wantMem) {
		t.Fatal("an instance with the image does not start with the memory the data segments write")
	}
	for _, inst := range []engine.Instance{want, i1} {
		if err := inst.Function("_initialize").Call(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	initialised := memoryBytes(t, want)
	if !bytes.Equal(memoryBytes(t, i1), initialised) {
		t.Fatal("the Go runtime initialises to another memory with the image")
	}
	if bytes.Equal(initialised[:len(wantMem)], wantMem) {
		t.Fatal("_initialize wrote nothing: the comparison above proves nothing")
	}
	if !bytes.Equal(memoryBytes(t, i2), wantMem) {
		t.Fatal("an instance sees another's writes")
	}
	i3 := instantiate(imaged)
	if !bytes.Equal(memoryBytes(t, i3), wantMem) {
		t.Fatal("an instance's writes changed the image")
	}
	open := imageFiles(t)
	if err := imaged.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := imageFiles(t); left != open-1 {
		t.Fatalf("%d image files open before the module's Close, %d after", open, left)
	}
}

// An instance whose memory cannot get the module's data (here: the image
// closed under it) fails to instantiate with an error; wazero panics when
// an allocator gives no memory, and the engine must not pass that on.
func TestMemoryImageUnavailable(t *testing.T) {
	a := mmapmem.New()
	if a == nil {
		t.Skip("no mapped memory on this platform")
	}
	ctx := context.Background()
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(testguest.CompilationCacheDir(t), WithMappedMemory(a))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 1024, Interruptible: true, HostFunctions: hostmodule.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	im := m.(*module).sh.image
	if im == nil {
		t.Skip("no memory images on this platform")
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	inst, err := m.Instantiate(ctx, engine.InstanceConfig{})
	if err == nil {
		_ = inst.Close(ctx)
		t.Fatal("an instance started without its data")
	}
	if !strings.Contains(err.Error(), "instantiate") {
		t.Fatalf("error %q does not say the instantiation failed", err)
	}
}

// imageFiles counts this process's open memory image files.
func imageFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "/memfd:wasmprov-memory-image") {
			n++
		}
	}
	return n
}
