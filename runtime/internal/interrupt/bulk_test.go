package interrupt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// ---- bulk memory instructions in pieces (bulk.go) ----

const (
	// bulkPages: the test module's memory (2.5 MiB).
	bulkPages = 40
	// bulkSeg: the length of its passive data segment.
	bulkSeg = 3*bulkChunk + 123
)

// bulkModule is the module of the bulk tests:
//
//	(memory (export "memory") 40)
//	(data $d passive: bulkSeg bytes, byte i is 7i + 3)
//	(func (export "fill") (param i32 i32 i32) (memory.fill (local.get 0) (local.get 1) (local.get 2)))
//	(func (export "copy") (param i32 i32 i32) (memory.copy ...))
//	(func (export "init") (param i32 i32 i32) (memory.init $d ...))
//	(func (export "drop") (data.drop $d))
func bulkModule() []byte { return bulkModuleOn(0) }

// bulkModuleOn is bulkModule with its instructions on memory m: 1 is a
// second memory (multi-memory: wasmtime), after a memory 0 of 20 pages,
// and the module also exports "copyx" (memory.copy 1 0: from memory 0 to
// memory 1).
func bulkModuleOn(m byte) []byte { return bulkModuleWith(m, bulkSeg) }

// bulkModuleWith is bulkModuleOn with a data segment of n bytes.
func bulkModuleWith(m byte, n int) []byte {
	seg := make([]byte, n)
	for i := range seg {
		seg[i] = byte(7*i + 3)
	}
	args := []byte{0x20, 0, 0x20, 1, 0x20, 2}
	body := func(code ...byte) []byte {
		b := cat([]byte{0}, code, []byte{0x0b})
		return cat(u(uint64(len(b))), b)
	}
	funcs := []byte{4, 0, 0, 0, 1}
	memories := []byte{1, 0x00, bulkPages}
	exports := cat([]byte{5},
		[]byte{4}, []byte("fill"), []byte{0, 0},
		[]byte{4}, []byte("copy"), []byte{0, 1},
		[]byte{4}, []byte("init"), []byte{0, 2},
		[]byte{4}, []byte("drop"), []byte{0, 3},
		[]byte{6}, []byte("memory"), []byte{2, m})
	code := cat([]byte{4},
		body(cat(args, []byte{0xfc, 11, m})...),
		body(cat(args, []byte{0xfc, 10, m, m})...),
		body(cat(args, []byte{0xfc, 8, 0, m})...),
		body(0xfc, 9, 0))
	if m == 1 {
		funcs = []byte{5, 0, 0, 0, 1, 0}
		memories = []byte{2, 0x00, bulkPages / 2, 0x00, bulkPages}
		exports = cat([]byte{6}, exports[1:], []byte{5}, []byte("copyx"), []byte{0, 4})
		code = cat([]byte{5}, code[1:], body(cat(args, []byte{0xfc, 10, 1, 0})...))
	}
	return mod(
		sec(1, 2, 0x60, 3, 0x7f, 0x7f, 0x7f, 0, 0x60, 0, 0),
		sec(3, funcs...),
		sec(5, memories...),
		sec(7, exports...),
		sec(12, 1),
		sec(10, code...),
		sec(11, cat([]byte{1, 1}, u(uint64(n)), seg)...),
	)
}

// copyxCases: copies from memory 0 (20 pages) to memory 1 (40) of
// bulkModuleOn(1), in bounds to the last byte of either and one beyond.
func copyxCases() []bulkCase {
	const size0, size1 = bulkPages / 2 << 16, bulkPages << 16
	var cs []bulkCase
	for _, n := range []uint32{0, 1000, bulkChunk, bulkChunk + 1, 1<<20 + 17} {
		cs = append(cs,
			bulkCase{fmt.Sprintf("copyx %d", n), []bulkCall{{"copyx", 5, 7, n}}},
			bulkCase{fmt.Sprintf("copyx %d from memory 0's end", n), []bulkCall{{"copyx", 0, size0 - n, n}}},
			bulkCase{fmt.Sprintf("copyx %d from one beyond memory 0", n), []bulkCall{{"copyx", 0, size0 - n + 1, n}}},
			bulkCase{fmt.Sprintf("copyx %d to memory 1's end", n), []bulkCall{{"copyx", size1 - n, 0, n}}},
			bulkCase{fmt.Sprintf("copyx %d to one beyond memory 1", n), []bulkCall{{"copyx", size1 - n + 1, 0, n}}})
	}
	return cs
}

// bulkCase: the calls of one case (each of an export with its three
// arguments, or "drop"), on a fresh instance whose memory holds
// bulkPattern.
type bulkCase struct {
	name  string
	calls []bulkCall
}

type bulkCall struct {
	op      string
	d, s, n uint32
}

// big reports whether the case's last call is longer than bulkChunk.
func (c bulkCase) big() bool { return c.calls[len(c.calls)-1].n > bulkChunk }

// bulkPattern is the memory every case starts from: no byte of it is the
// fill value (0x5a) next to another, so a fill shows where it wrote.
var bulkPattern = func() []byte {
	b := make([]byte, bulkPages<<16)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}()

// bulkCases: fills, copies (disjoint, overlapping forward and backward, in
// place, between the memory's ends) and inits (of a live and a dropped
// segment), of lengths below, at and above bulkChunk and 0, in bounds to
// the last byte and one byte beyond, and with operands that wrap in i32.
func bulkCases() []bulkCase {
	const size = bulkPages << 16
	var cs []bulkCase
	add := func(name string, calls ...bulkCall) { cs = append(cs, bulkCase{name, calls}) }
	for _, n := range []uint32{0, 1, 1000, bulkChunk - 1, bulkChunk, bulkChunk + 1, 2 * bulkChunk, 3*bulkChunk + 5, 1<<20 + 17} {
		add(fmt.Sprintf("fill %d", n), bulkCall{"fill", 7, 0x5a, n})
		add(fmt.Sprintf("fill %d to the end", n), bulkCall{"fill", size - n, 0x15a, n})
		add(fmt.Sprintf("fill %d one beyond", n), bulkCall{"fill", size - n + 1, 0x5a, n})
		add(fmt.Sprintf("copy %d disjoint up", n), bulkCall{"copy", n + 5000, 3, n})
		add(fmt.Sprintf("copy %d disjoint down", n), bulkCall{"copy", 3, n + 5000, n})
		add(fmt.Sprintf("copy %d overlapping, up by a third", n), bulkCall{"copy", 100 + n/3 + 1, 100, n})
		add(fmt.Sprintf("copy %d overlapping, down by a third", n), bulkCall{"copy", 100, 100 + n/3 + 1, n})
		add(fmt.Sprintf("copy %d overlapping, up by one", n), bulkCall{"copy", 101, 100, n})
		add(fmt.Sprintf("copy %d overlapping, down by one", n), bulkCall{"copy", 100, 101, n})
		add(fmt.Sprintf("copy %d in place", n), bulkCall{"copy", 999, 999, n})
		add(fmt.Sprintf("copy %d from the end to the start", n), bulkCall{"copy", 0, size - n, n})
		add(fmt.Sprintf("copy %d from the start to the end", n), bulkCall{"copy", size - n, 0, n})
		add(fmt.Sprintf("copy %d to one beyond", n), bulkCall{"copy", size - n + 1, 0, n})
		add(fmt.Sprintf("copy %d from one beyond", n), bulkCall{"copy", 0, size - n + 1, n})
		if n <= bulkSeg {
			add(fmt.Sprintf("init %d", n), bulkCall{"init", 11, 0, n})
			add(fmt.Sprintf("init %d of the segment's end to the memory's", n), bulkCall{"init", size - n, bulkSeg - n, n})
			add(fmt.Sprintf("init %d one beyond the segment", n), bulkCall{"init", 0, bulkSeg - n + 1, n})
			add(fmt.Sprintf("init %d one beyond the memory", n), bulkCall{"init", size - n + 1, 0, n})
			add(fmt.Sprintf("init %d after data.drop", n), bulkCall{"drop", 0, 0, 0}, bulkCall{"init", 0, 0, n})
		}
	}
	for _, n := range []uint32{0, 1, bulkChunk + 1} {
		add(fmt.Sprintf("fill %d at 2^32-1", n), bulkCall{"fill", 1<<32 - 1, 1, n})
		add(fmt.Sprintf("copy %d from 2^32-1", n), bulkCall{"copy", 0, 1<<32 - 1, n})
		add(fmt.Sprintf("copy %d to 2^32-1", n), bulkCall{"copy", 1<<32 - 1, 0, n})
		add(fmt.Sprintf("init %d from 2^32-1", n), bulkCall{"init", 0, 1<<32 - 1, n})
	}
	add("fill 0 at the memory's size", bulkCall{"fill", size, 1, 0})
	add("fill 0 beyond the memory's size", bulkCall{"fill", size + 1, 1, 0})
	add("fill 2^32-1", bulkCall{"fill", 0, 1, 1<<32 - 1})
	add("copy 2^32-1", bulkCall{"copy", 1, 0, 1<<32 - 1})
	add("init 2^32-1", bulkCall{"init", 1, 0, 1<<32 - 1})
	add("init 0 at the segment's length", bulkCall{"init", 0, bulkSeg, 0})
	add("two fills and a copy", bulkCall{"fill", 0, 1, bulkChunk + 9}, bulkCall{"fill", 1 << 20, 2, 2*bulkChunk + 1},
		bulkCall{"copy", 12345, 0, 1<<20 + bulkChunk})
	return cs
}

// bulkResult is what a case leaves: the memory, and the error of its last
// call (the first line of the trap's message), if any.
type bulkResult struct {
	mem []byte
	err string
}

// trapLine is an error's first line ("" for none).
func trapLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.SplitN(err.Error(), "\n", 2)[0]
}

// compareBulk checks a rewritten module's result against the original's.
func compareBulk(t *testing.T, c bulkCase, got, want bulkResult) {
	t.Helper()
	if got.err != want.err {
		t.Fatalf("%s: error %q, the original %q", c.name, got.err, want.err)
	}
	if !bytes.Equal(got.mem, want.mem) {
		i := 0
		for i < len(got.mem) && got.mem[i] == want.mem[i] {
			i++
		}
		t.Fatalf("%s: memory differs from the original's from byte %d", c.name, i)
	}
}

// bulkWazero runs the cases on wazero.
type bulkWazero struct {
	r      wazero.Runtime
	cm     wazero.CompiledModule
	yields int
	// stop: the yield function panics with errStop.
	stop bool
}

func newBulkWazero(ctx context.Context, t *testing.T, wasm []byte) *bulkWazero {
	t.Helper()
	b := &bulkWazero{r: wazero.NewRuntime(ctx)}
	t.Cleanup(func() { b.r.Close(ctx) })
	_, err := b.r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(func() {
		b.yields++
		if b.stop {
			panic(errStop)
		}
	}).Export(YieldName).Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.cm, err = b.r.CompileModule(ctx, wasm); err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs c's calls on a fresh instance; yields counts the yields of the
// last call.
func (b *bulkWazero) run(ctx context.Context, t *testing.T, c bulkCase) bulkResult {
	t.Helper()
	m, err := b.r.InstantiateModule(ctx, b.cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	mem := m.ExportedMemory("memory")
	if !mem.Write(0, bulkPattern) {
		t.Fatal("cannot write the memory")
	}
	var res bulkResult
	for _, call := range c.calls {
		b.yields = 0
		var args []uint64
		if call.op != "drop" {
			args = []uint64{uint64(call.d), uint64(call.s), uint64(call.n)}
		}
		_, err = m.ExportedFunction(call.op).Call(ctx, args...)
		res.err = trapLine(err)
	}
	buf, _ := mem.Read(0, mem.Size())
	res.mem = bytes.Clone(buf)
	return res
}

// TestBulkSplitSameResults: every bulk case leaves the memory and the trap
// as the original module does, instrumented with FlagBudget (wazero; the
// wasmtime tests run FlagMemory), with the real budget and with a yield at
// every check; and an instruction longer than bulkChunk runs in pieces: it
// yields at least once a piece with a yield at every check, and a stop at
// its first yield leaves the memory as it was.
func TestBulkSplitSameResults(t *testing.T) {
	ctx := context.Background()
	wasm := bulkModule()
	orig := newBulkWazero(ctx, t, wasm)
	out, err := InstrumentWith(wasm, FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	checkBudgetOutput(t, wasm, out)
	if n := helperCount(t, wasm, out); n != 3 {
		t.Fatalf("%d helpers, want 3 (fill, copy, init)", n)
	}
	each, _, err := instrument(wasm, FlagBudget, 1)
	if err != nil {
		t.Fatal(err)
	}
	budget, every := newBulkWazero(ctx, t, out), newBulkWazero(ctx, t, each)
	cases := bulkCases()
	for _, c := range cases {
		want := orig.run(ctx, t, c)
		compareBulk(t, c, budget.run(ctx, t, c), want)
		compareBulk(t, c, every.run(ctx, t, c), want)
		if !c.big() || want.err != "" {
			continue
		}
		last := c.calls[len(c.calls)-1]
		if pieces := int((last.n + bulkChunk - 1) / bulkChunk); every.yields < pieces {
			t.Errorf("%s: %d yields with a yield at every check, want at least one for each of its %d pieces", c.name, every.yields, pieces)
		}
		if len(c.calls) == 1 {
			every.stop = true
			got := every.run(ctx, t, c)
			every.stop = false
			if !strings.Contains(got.err, errStop.Error()) {
				t.Fatalf("%s: stopped with %q", c.name, got.err)
			}
			if !bytes.Equal(got.mem, bulkPattern) {
				t.Errorf("%s: stopped at its first yield, it had written", c.name)
			}
		}
	}
	t.Logf("%d cases", len(cases))
}

// TestBulkSplitRefuses: an index beyond the module's functions, which would
// name a helper after the rewrite, is refused in both modes, in code and in
// the sections that hold function indices.
func TestBulkSplitRefuses(t *testing.T) {
	typeFunc := [][]byte{sec(1, 1, 0x60, 0, 0), sec(3, 1, 0)}
	code := sec(10, 1, 2, 0, 0x0b)
	for _, c := range []struct {
		name string
		wasm []byte
	}{
		{"call 1", mod(append(typeFunc, sec(10, 1, 4, 0, 0x10, 1, 0x0b))...)},
		{"ref.func 1", mod(append(typeFunc, sec(10, 1, 5, 0, 0xd2, 1, 0x1a, 0x0b))...)},
		{"export of function 1", mod(append(typeFunc, sec(7, 1, 1, 'f', 0x00, 1), code)...)},
		{"start function 1", mod(append(typeFunc, sec(8, 1), code)...)},
		{"element segment naming function 1", mod(append(typeFunc, sec(4, 1, 0x70, 0x00, 1), sec(9, 1, 0, 0x41, 0, 0x0b, 1, 1), code)...)},
		{"ref.func 1 in a global", mod(append(typeFunc, sec(6, 1, 0x70, 0x00, 0xd2, 1, 0x0b), code)...)},
	} {
		for _, f := range []Flag{FlagMemory, FlagBudget} {
			if _, err := InstrumentWith(c.wasm, f); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "function index 1 out of range") {
				t.Errorf("%s, flag %d: want ErrUnsupported (function index 1), got %v", c.name, f, err)
			}
		}
	}
	// memory.init of a segment longer than bulkChunk without a data count
	// section (invalid: memory.init needs one).
	seg := cat([]byte{1, 1}, u(bulkChunk+1), make([]byte, bulkChunk+1))
	wasm := mod(append(typeFunc, sec(5, 1, 0, 1), sec(10, 1, 12, 0, 0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 8, 0, 0, 0x0b), sec(11, seg...))...)
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		if _, err := InstrumentWith(wasm, f); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "data count") {
			t.Errorf("memory.init without a data count section, flag %d: want ErrUnsupported, got %v", f, err)
		}
	}
	// 64-bit memories take i64 operands: refused in FlagMemory too.
	for name, w := range map[string][]byte{
		"memory64":          mod(sec(5, 1, 0x04, 1)),
		"imported memory64": mod(sec(2, 1, 1, 'e', 1, 'm', 0x02, 0x04, 1)),
	} {
		if _, err := InstrumentWith(w, FlagMemory); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "64-bit") {
			t.Errorf("%s: want ErrUnsupported (64-bit), got %v", name, err)
		}
	}
}

// bulkSeeds: the bulk modules, with a small data segment (whose
// memory.init is not split), for FuzzInstrument's corpus.
func bulkSeeds() [][]byte {
	return [][]byte{bulkModuleWith(0, 40), bulkModuleWith(1, 40)}
}
