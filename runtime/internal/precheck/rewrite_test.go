package precheck

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// tables returns the limits of every table in the table section.
func tables(t *testing.T, wasm []byte) []wasmbin.Limits {
	t.Helper()
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var s wasmbin.Section
	var out []wasmbin.Limits
	for {
		ok, err := it.Next(&s)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		if s.ID != wasmbin.SectionIDTable {
			continue
		}
		r := s.Reader()
		n, _ := r.U32()
		for ; n > 0; n-- {
			tb, err := r.ReadTable()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tb.Type.Limits)
		}
	}
}

func TestTableRewrite(t *testing.T) {
	l := Limits{MaxTableEntries: 1000, MaxTables: 5}
	// No max; a max above; a max within; a 5-byte min with no max; an
	// initialised (ref null func) table with no max.
	g := gen{tables: [][]byte{
		{0x70, 0x00, 0x05},
		cat([]byte{0x70, 0x01, 0x02}, leb(5000)),
		{0x70, 0x01, 0x01, 0x10},
		{0x6f, 0x00, 0x83, 0x80, 0x80, 0x80, 0x00},
		{0x40, 0x00, 0x63, 0x70, 0x00, 0x01, 0xd0, 0x70, 0x0b},
	}}
	in := g.bytes()
	out, err := Check(in, l)
	if err != nil {
		t.Fatal(err)
	}
	got := tables(t, out)
	want := [][3]uint64{{5, 1000}, {2, 1000}, {1, 16}, {3, 1000}, {1, 1000}}
	for i, w := range want {
		if !got[i].HasMax() || got[i].Min != w[0] || got[i].Max != w[1] {
			t.Errorf("table %d: %+v, want min %d max %d", i, got[i], w[0], w[1])
		}
	}
	if st, err := Measure(out); err != nil || st.TablesRewritten != 0 {
		t.Errorf("the output needs rewriting again: %+v %v", st, err)
	}
	// Only the table section changed: what follows it is intact.
	g.tables = nil
	g.mems = [][]byte{{0x00, 0x01}}
	g.exports = [][]byte{memExport}
	g.tables = [][]byte{{0x70, 0x00, 0x05}}
	in = g.bytes()
	out, _ = Check(in, l)
	tableAt := sectionOffset(t, in, wasmbin.SectionIDTable)
	if !bytes.Equal(in[:tableAt], out[:tableAt]) || !bytes.Equal(in[tableAt+6:], out[tableAt+8:]) || !bytes.Equal(out[tableAt:tableAt+8], []byte{0x04, 0x06, 0x01, 0x70, 0x01, 0x05, 0xe8, 0x07}) {
		t.Errorf("rewrite changed more than the table section:\n%x\n%x", in, out)
	}
	// Nothing to rewrite: the input itself, not a copy.
	in = funcsModule(ret0())
	if out, err := Check(in, l); err != nil || &out[0] != &in[0] || len(out) != len(in) {
		t.Errorf("no rewrite: a copy (%v)", err)
	}
}

// growModule: a table of 1 funcref with no maximum, and
// (func (export "grow") (param i32) (result i32) table.grow 0 (ref.null func) n).
func growModule() []byte {
	g := gen{
		types:   [][]byte{i32i32},
		funcs:   []uint32{0},
		tables:  [][]byte{{0x70, 0x00, 0x01}},
		exports: [][]byte{cat(name("grow"), []byte{0x00, 0x00})},
		codes:   [][]byte{fnBody(cat([]byte{0xd0, 0x70}, opLocalGet(0), []byte{0xfc, 0x0f, 0x00}, opEnd))},
	}
	return g.bytes()
}

// TestTableGrowBoundedWazero: after the rewrite, table.grow past
// MaxTableEntries returns -1 on wazero (before it, it succeeds).
func TestTableGrowBoundedWazero(t *testing.T) {
	ctx := context.Background()
	grow := func(wasm []byte, n uint32) int32 {
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		m, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.ExportedFunction("grow").Call(ctx, api.EncodeU32(n))
		if err != nil {
			t.Fatal(err)
		}
		return int32(r[0])
	}
	in := growModule()
	max := DefaultLimits.MaxTableEntries
	if got := grow(in, uint32(max)); got != 1 {
		t.Fatalf("unbounded table.grow by %d: %d, want 1 (the old size)", max, got)
	}
	out, err := Check(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := grow(out, uint32(max)); got != -1 {
		t.Errorf("table.grow past MaxTableEntries: %d, want -1", got)
	}
	if got := grow(out, uint32(max-1)); got != 1 {
		t.Errorf("table.grow to MaxTableEntries: %d, want 1", got)
	}
}
