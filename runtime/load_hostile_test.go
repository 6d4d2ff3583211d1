package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/runtime"
)

// Loading has a deadline and a budget (red-team findings 6, 7 and 8): a
// module whose ABI exports or initialiser loop, that has a start function,
// or that would take the compiler minutes or gigabytes is refused with a
// classified error, promptly, without the host growing.

// loadDeadline is the load timeout of these tests' policies; loadSlack is
// how late a Load may return after it (a guest stops at its next check;
// on a loaded CI machine the goroutines involved also wait for a core).
const (
	loadDeadline = time.Second
	loadSlack    = 250 * time.Millisecond
)

// withFunc adds a defined function (not exported) and returns its index.
func (m *genModule) withFunc(f genFunc) uint32 {
	m.funcs = append(m.funcs, f)
	return uint32(len(m.imports) + len(m.funcs) - 1)
}

// exportLoops is a provider whose export name loops forever.
func exportLoops(export string) []byte {
	m := providerModule(0, nil)
	for i := range m.funcs {
		if m.funcs[i].export == export {
			if len(m.funcs[i].results) == 1 && m.funcs[i].results[0] == valI64 {
				m.funcs[i].body = []byte{opLoop, opBlockEmpty, opBr, 0, opEnd, opI64Const, 0}
			} else {
				m.funcs[i].body = loopForever(nil)
			}
		}
	}
	if export == abi.ExportInitialize {
		m.funcs = append(m.funcs, genFunc{export: abi.ExportInitialize, body: []byte{opLoop, opBlockEmpty, opBr, 0, opEnd}})
	}
	return m.bytes()
}

// startLoops is a provider with a start function that loops.
func startLoops() []byte {
	m := providerModule(0, nil)
	f := m.withFunc(genFunc{body: []byte{opLoop, opBlockEmpty, opBr, 0, opEnd}})
	m.extra = map[byte][]byte{8: uleb(uint64(f))}
	return m.bytes()
}

// nested is depth opening instructions op, body, and their ends.
func nested(op byte, depth int, body []byte) []byte {
	out := make([]byte, 0, 3*depth+len(body))
	for range depth {
		out = append(out, op, opBlockEmpty)
	}
	out = append(out, body...)
	for range depth {
		out = append(out, opEnd)
	}
	return out
}

func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status: RSS is measured on Linux only")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// hostileLoadRSS is how much the host may grow while refusing one hostile
// module (docs/SECURITY.md, "Limits"): the module itself is in memory
// already; what Load may add is the decoder's bookkeeping.
const hostileLoadRSS = 64 << 20

func TestHostileModulesAreRefusedPromptly(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	bomb := func(f genFunc) []byte {
		m := providerModule(0, nil)
		m.withFunc(f)
		return m.bytes()
	}
	manyLoops := func() []byte {
		m := providerModule(0, nil)
		body := bytes.Repeat([]byte{opLoop, opBlockEmpty, opEnd}, 10000)
		for range 1000 {
			m.withFunc(genFunc{results: i32x1, body: append(body, opI32Const, 0)})
		}
		return m.bytes()
	}
	brTable := func() []byte {
		targets := append(uleb(1_000_000), bytes.Repeat([]byte{0}, 1_000_000)...)
		inner := append([]byte{opI32Const, 0, opBrTable}, targets...)
		inner = append(inner, 0)
		return bomb(genFunc{results: i32x1, body: append(nested(opLoop, 100_000, inner), opI32Const, 0)})
	}
	for _, tc := range []struct {
		name  string
		wasm  func() []byte
		class error // ErrInvalidModule or ErrLoadTimeout
		want  string
	}{
		{"wasmprov_abi_version loops", func() []byte { return exportLoops(abi.ExportABIVersion) }, runtime.ErrLoadTimeout, "starting an instance"},
		{"wasmprov_capabilities loops", func() []byte { return exportLoops(abi.ExportCapabilities) }, runtime.ErrLoadTimeout, "starting an instance"},
		{"_initialize loops", func() []byte { return exportLoops(abi.ExportInitialize) }, runtime.ErrLoadTimeout, "starting an instance"},
		{"a start function that loops", startLoops, runtime.ErrInvalidModule, "start"},
		{"4 G locals in one function", func() []byte {
			return bomb(genFunc{results: i32x1, locals: [][2]uint64{{1<<32 - 1, valI32}}, body: []byte{opI32Const, 0}})
		}, runtime.ErrInvalidModule, "locals"},
		{"two local groups of 2 G each", func() []byte {
			return bomb(genFunc{results: i32x1, locals: [][2]uint64{{1 << 31, valI32}, {1 << 31, valI64}}, body: []byte{opI32Const, 0}})
		}, runtime.ErrInvalidModule, "locals"},
		{"1,000 functions of 10,000 loops", manyLoops, runtime.ErrInvalidModule, "loops"},
		{"br_table of 1 M targets in 100,000 nested loops", brTable, runtime.ErrInvalidModule, ""},
		{"100,000 nested blocks", func() []byte {
			return bomb(genFunc{results: i32x1, body: append(nested(opBlock, 100_000, nil), opI32Const, 0)})
		}, runtime.ErrInvalidModule, "MaxFunctionBytes"},
		{"3,000 nested blocks", func() []byte {
			return bomb(genFunc{results: i32x1, body: append(nested(opBlock, 3_000, nil), opI32Const, 0)})
		}, runtime.ErrInvalidModule, "MaxNesting"},
		{"10,000 nested loops", func() []byte {
			return bomb(genFunc{results: i32x1, body: append(nested(opLoop, 10_000, nil), opI32Const, 0)})
		}, runtime.ErrInvalidModule, "MaxLoops"},
		{"a table imported from env", func() []byte {
			m := providerModule(0, nil)
			m.extra = map[byte][]byte{2: vec(append(append(wasmName("env"), wasmName("t")...), 0x01, 0x70, 0x00, 0x01))}
			return m.bytes()
		}, runtime.ErrInvalidModule, "table"},
		{"a shared memory (threads)", func() []byte {
			m := providerModule(0, nil)
			m.extra = map[byte][]byte{5: vec([]byte{0x03, 0x01, 0x01})}
			return m.bytes()
		}, runtime.ErrInvalidModule, "shared"},
		{"ref.func executed in a loop (a function reference kept per execution on wazero)", func() []byte {
			m := providerModule(0, nil)
			self := uint32(len(m.imports) + len(m.funcs))
			body := append([]byte{opLoop, opBlockEmpty, 0xd2}, uleb(uint64(self))...) // ref.func self
			m.withFunc(genFunc{body: append(body, opDrop, opBr, 0, opEnd)})
			return m.bytes()
		}, runtime.ErrInvalidModule, "NoRefFuncInCode"},
		{"a table of 10 M entries", func() []byte {
			m := providerModule(0, nil)
			m.extra = map[byte][]byte{4: vec(append([]byte{0x70, 0x00}, uleb(10_000_000)...))}
			return m.bytes()
		}, runtime.ErrInvalidModule, "table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := tc.wasm()
			before := rss(t)
			start := time.Now()
			p, err := rt.LoadBytes(ctx, "hostile", wasm, runtime.WithPolicy(runtime.Policy{LoadTimeout: runtime.Duration(loadDeadline)}))
			took := time.Since(start)
			if err == nil {
				p.Close(ctx)
				t.Fatal("the module loaded")
			}
			if !errors.Is(err, tc.class) {
				t.Errorf("want an error wrapping %v, got %v", tc.class, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want %q in %v", tc.want, err)
			}
			if took > loadDeadline+loadSlack {
				t.Errorf("Load returned after %s (load deadline %s)", took, loadDeadline)
			}
			if grew := rss(t) - before; grew > hostileLoadRSS {
				t.Errorf("the host grew by %d MiB refusing the module", grew>>20)
			}
			t.Logf("%s: %s after %s (module %d KiB): %v", rt.Engine(), tc.name, took.Round(time.Millisecond), len(wasm)>>10, err)
		})
	}
}

// An instance the pool starts during a call, after load, is bounded by
// the load deadline too: this guest's _initialize loops once the real
// clock passes a time just after it was loaded, and calls made without a
// deadline of their own need a new instance every time.
func TestInstanceStartDuringCallsIsBounded(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	after := time.Now().Add(2 * time.Second).UnixNano() // the load is over by then
	m := providerModule(uint64(abi.CapClock), nil,
		genImport{"wasi_snapshot_preview1", "clock_time_get", []byte{valI32, valI64, valI32}, i32x1})
	// _initialize: clock_time_get(realtime, 0, &t at 0); loop while t > after.
	init := []byte{opI32Const, 0, opI64Const, 0, opI32Const, 0, opCall, 0, opDrop,
		opLoop, opBlockEmpty, opI32Const, 0, 0x29, 0x03, 0x00, opI64Const} // i64.load align=3 offset=0
	init = append(init, sleb(after)...)
	init = append(init, 0x55, opBrIf, 0, opEnd) // i64.gt_s; br_if 0
	m.funcs = append(m.funcs, genFunc{export: abi.ExportInitialize, body: init})
	p, err := rt.LoadBytes(ctx, "late-loop", m.bytes(), runtime.WithPolicy(runtime.Policy{
		LoadTimeout: runtime.Duration(loadDeadline), MaxCallsPerInstance: 1, PoolSize: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	spec := newMachine("m", "u", map[string]any{}).Spec
	if err := cloud.SeedProvider(p, nil).Validate(spec); err != nil { // the pre-warmed instance
		t.Fatal(err)
	}
	time.Sleep(time.Until(time.Unix(0, after)) + 50*time.Millisecond)
	start := time.Now()
	err = cloud.SeedProvider(p, nil).Validate(spec) // needs a new instance, whose _initialize loops
	took := time.Since(start)
	if !errors.Is(err, runtime.ErrLoadTimeout) {
		t.Errorf("want ErrLoadTimeout, got %v", err)
	}
	if took > loadDeadline+loadSlack {
		t.Errorf("the call returned after %s", took)
	}
}

// Tables are host memory the linear-memory limit does not count: they are
// capped at the policy's MaxTableEntries, so table.grow fails past it and
// table.fill cannot reach beyond it (red-team finding 9).
func TestTablesAreBounded(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	// Get: table.grow(ref.null, n) on a table of 1 entry with no maximum;
	// status 0 if it answered -1, 1 (error) if it grew.
	grow := func(n int64) []byte {
		body := []byte{0xd0, 0x70, opI32Const}
		body = append(body, sleb(n)...)
		body = append(body, 0xfc, 15, 0, opI32Const, 0x7f, 0x47) // table.grow 0; i32.const -1; i32.ne
		m := providerModule(0, map[string][]byte{abi.MethodGet.Export(): body})
		m.extra = map[byte][]byte{4: vec([]byte{0x70, 0x00, 0x01})}
		return m.bytes()
	}
	// Validate: table.fill(0, ref.null, n): traps beyond the table.
	fill := func(n int64) []byte {
		body := []byte{opI32Const, 0, 0xd0, 0x70, opI32Const}
		body = append(body, sleb(n)...)
		body = append(body, 0xfc, 17, 0, opI32Const, 0)
		m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): body})
		m.extra = map[byte][]byte{4: vec([]byte{0x70, 0x00, 0x01})}
		return m.bytes()
	}
	load := func(t *testing.T, wasm []byte, policy runtime.Policy) *runtime.Provider {
		p, err := rt.LoadBytes(ctx, "tables", wasm, runtime.WithPolicy(policy))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	m := newMachine("m", "u", map[string]any{})
	before := rss(t)
	t.Run("grow by 200 M entries", func(t *testing.T) {
		if _, err := load(t, grow(200_000_000), runtime.Policy{}).Get(context.Background(), m, nil); runtime.ErrorClass(err) != runtime.ClassBadResult {
			// Status 0 without an Instance is a bad result; status 1 would
			// mean the table grew.
			t.Fatalf("table.grow past the limit did not answer -1: %v", err)
		}
	})
	t.Run("grow within the policy's limit", func(t *testing.T) {
		_, err := load(t, grow(999), runtime.Policy{MaxTableEntries: 1000}).Get(context.Background(), m, nil)
		if runtime.ErrorClass(err) != runtime.ClassTransient {
			t.Fatalf("table.grow to the limit failed: %v", err)
		}
	})
	t.Run("grow one past the policy's limit", func(t *testing.T) {
		_, err := load(t, grow(1000), runtime.Policy{MaxTableEntries: 1000}).Get(context.Background(), m, nil)
		if runtime.ErrorClass(err) != runtime.ClassBadResult {
			t.Fatalf("table.grow past the limit did not answer -1: %v", err)
		}
	})
	t.Run("fill of 50 M entries", func(t *testing.T) {
		err := load(t, fill(50_000_000), runtime.Policy{}).Validate(context.Background(), m.Spec, nil)
		expectCallError(t, err, runtime.ClassTrap, runtime.ErrTrap)
	})
	if grew := rss(t) - before; grew > hostileLoadRSS {
		t.Errorf("the host grew by %d MiB", grew>>20)
	}
}

// Inspect runs a module's exports too, and is what one does to a module
// not yet trusted: it is bounded by the load deadline as well.
func TestInspectIsBounded(t *testing.T) {
	rt := newRuntime(t, runtime.WithDefaultPolicy(runtime.Policy{LoadTimeout: runtime.Duration(loadDeadline)}))
	start := time.Now()
	info, err := rt.Inspect(context.Background(), exportLoops(abi.ExportInitialize))
	if took := time.Since(start); took > loadDeadline+loadSlack {
		t.Errorf("Inspect returned after %s", took)
	}
	if err != nil || len(info.Problems) == 0 || !strings.Contains(strings.Join(info.Problems, "\n"), abi.ExportInitialize) {
		t.Errorf("want the looping _initialize among the problems, got %+v, %v", info, err)
	}
	if _, err := rt.Inspect(context.Background(), startLoops()); !errors.Is(err, runtime.ErrInvalidModule) {
		t.Errorf("a start section: want ErrInvalidModule, got %v", err)
	}
}
