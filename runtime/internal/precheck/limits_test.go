package precheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// sectionOffset is the offset of the section with id in wasm (found with
// wasmbin's iterator, independently of Check).
func sectionOffset(t *testing.T, wasm []byte, id byte) int {
	t.Helper()
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		t.Fatal(err)
	}
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil || !ok {
			t.Fatalf("no section %d (%v)", id, err)
		}
		if s.ID == id {
			return s.Offset
		}
	}
}

// codeOffset is the offset of the i-th body (its size) in the code
// section.
func codeOffset(t *testing.T, wasm []byte, i int) int {
	t.Helper()
	it, _ := wasmbin.NewSections(wasm)
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil || !ok {
			t.Fatalf("no code section (%v)", err)
		}
		if s.ID == wasmbin.SectionIDCode {
			break
		}
	}
	r := s.Reader()
	r.U32()
	for ; i > 0; i-- {
		if _, err := r.ReadCode(); err != nil {
			t.Fatal(err)
		}
	}
	return r.Offset()
}

func fnBody(expr []byte) []byte { return body(nil, expr) }

// ret0 is a body of type (func (param i32) (result i32)) returning its
// parameter after expr.
func ret0(expr ...[]byte) []byte { return fnBody(finish(cat(expr...))) }

var memExport = cat(name("memory"), []byte{0x02, 0x00})

// TestLimits proves each limit is enforced: a module one over a small
// limit is refused with the limit's error, and at the limit it passes.
func TestLimits(t *testing.T) {
	tbl := func(min uint64) []byte { return cat([]byte{0x70, 0x01}, leb(min), leb(min)) }
	data := func(n int) []byte { return cat([]byte{0x01}, leb(uint64(n)), make([]byte, n)) } // passive
	elem := func(n int) []byte {                                                             // passive funcref, n × function 0
		return cat([]byte{0x01, 0x00}, leb(uint64(n)), make([]byte, n))
	}
	global := []byte{0x7f, 0x00, 0x41, 0x00, 0x0b}
	nested := func(d int) []byte { return ret0(repeat(opBlock, d), repeat(opEnd, d)) }
	brTable := func(n int) []byte { // n targets, the default included
		return ret0(opBlock, opLocalGet(0), []byte{0x0e}, leb(uint64(n-1)), make([]byte, n), opEnd)
	}
	for _, c := range []struct {
		limit string
		l     Limits
		// over is a module one over the limit, at the one at it.
		over, at []byte
		value    uint64
		max      int
		// where and what of the error; offset is found by off.
		where string
		off   func(t *testing.T, wasm []byte) int
		what  string
	}{
		{limit: "MaxModuleBytes", l: Limits{MaxModuleBytes: 9}, over: module([]byte{0x00, 0x01, 0x00}), at: module(),
			value: 11, max: 9, where: "the module", what: "has 11 bytes"},
		{limit: "MaxTypes", l: Limits{MaxTypes: 2},
			over: (&gen{types: [][]byte{i32i32, i32i32, i32i32}}).bytes(), at: (&gen{types: [][]byte{i32i32, i32i32}}).bytes(),
			value: 3, max: 2, where: "the type section (at offset 0x%x)", off: secOff(wasmbin.SectionIDType), what: "declares 3 types"},
		{limit: "MaxTypeParams", l: Limits{MaxTypeParams: 2},
			over: withTypesBytes(funcType([]byte{0x7f, 0x7f, 0x7f}, nil)), at: withTypesBytes(funcType([]byte{0x7f, 0x7f}, nil)),
			value: 3, max: 2, where: "type 0 (at offset 0xb)", what: "has 3 parameters"},
		{limit: "MaxTypeResults", l: Limits{MaxTypeResults: 1},
			over: withTypesBytes(i32i32, funcType(nil, []byte{0x7f, 0x7e})), at: withTypesBytes(i32i32),
			value: 2, max: 1, where: "type 1 (at offset 0x10)", what: "has 2 results"},
		{limit: "MaxImports", l: Limits{MaxImports: 1},
			over:  (&gen{types: [][]byte{i32i32}, imports: [][]byte{fnImport("a"), fnImport("b")}}).bytes(),
			at:    (&gen{types: [][]byte{i32i32}, imports: [][]byte{fnImport("a")}}).bytes(),
			value: 2, max: 1, where: "the import section (at offset 0x%x)", off: secOff(wasmbin.SectionIDImport), what: "declares 2 imports"},
		{limit: "MaxFunctions", l: Limits{MaxFunctions: 1}, over: funcsModule(ret0(), ret0()), at: funcsModule(ret0()),
			value: 2, max: 1, where: "the function section (at offset 0x%x)", off: secOff(wasmbin.SectionIDFunction), what: "declares 2 functions"},
		{limit: "MaxTables", l: Limits{MaxTables: 1}, over: (&gen{tables: [][]byte{tbl(1), tbl(1)}}).bytes(), at: (&gen{tables: [][]byte{tbl(1)}}).bytes(),
			value: 2, max: 1, where: "the table section (at offset 0x%x)", off: secOff(wasmbin.SectionIDTable), what: "declares 2 tables"},
		{limit: "MaxTags", l: Limits{MaxTags: 1}, over: tagModule(2), at: tagModule(1),
			value: 2, max: 1, where: "the tag section (at offset 0x%x)", off: secOff(wasmbin.SectionIDTag), what: "declares 2 tags"},
		{limit: "MaxGlobals", l: Limits{MaxGlobals: 1}, over: (&gen{globals: [][]byte{global, global}}).bytes(), at: (&gen{globals: [][]byte{global}}).bytes(),
			value: 2, max: 1, where: "the global section (at offset 0x%x)", off: secOff(wasmbin.SectionIDGlobal), what: "declares 2 globals"},
		{limit: "MaxExports", l: Limits{MaxExports: 1},
			over:  (&gen{mems: [][]byte{{0x00, 0x01}}, exports: [][]byte{memExport, cat(name("m2"), []byte{0x02, 0x00})}}).bytes(),
			at:    (&gen{mems: [][]byte{{0x00, 0x01}}, exports: [][]byte{memExport}}).bytes(),
			value: 2, max: 1, where: "the export section (at offset 0x%x)", off: secOff(wasmbin.SectionIDExport), what: "declares 2 exports"},
		{limit: "MaxElementSegments", l: Limits{MaxElementSegments: 1}, over: elemModule(elem(1), elem(1)), at: elemModule(elem(1)),
			value: 2, max: 1, where: "the element section (at offset 0x%x)", off: secOff(wasmbin.SectionIDElement), what: "declares 2 element segments"},
		{limit: "MaxElements", l: Limits{MaxElements: 5}, over: elemModule(elem(3), elem(3)), at: elemModule(elem(3), elem(2)),
			value: 6, max: 5, where: "element segment 1 (at offset 0x%x)", off: elemSegOff(1), what: "brings the elements to 6"},
		{limit: "MaxDataSegments", l: Limits{MaxDataSegments: 1}, over: (&gen{datas: [][]byte{data(1), data(1)}}).bytes(), at: (&gen{datas: [][]byte{data(1)}}).bytes(),
			value: 2, max: 1, where: "the data section (at offset 0x%x)", off: secOff(wasmbin.SectionIDData), what: "declares 2 data segments"},
		{limit: "MaxDataBytes", l: Limits{MaxDataBytes: 10}, over: (&gen{datas: [][]byte{data(6), data(5)}}).bytes(), at: (&gen{datas: [][]byte{data(6), data(4)}}).bytes(),
			value: 11, max: 10, where: "data segment 1 (at offset 0x%x)", off: func(t *testing.T, w []byte) int { return sectionOffset(t, w, wasmbin.SectionIDData) + 2 + 1 + 8 }, what: "brings the data to 11 bytes"},
		{limit: "MaxTableEntries", l: Limits{MaxTableEntries: 5}, over: (&gen{tables: [][]byte{tbl(6)}}).bytes(), at: (&gen{tables: [][]byte{tbl(5)}}).bytes(),
			value: 6, max: 5, where: "table 0 (at offset 0x%x)", off: func(t *testing.T, w []byte) int { return sectionOffset(t, w, wasmbin.SectionIDTable) + 3 }, what: "has an initial size of 6 entries"},
		{limit: "MaxInitialTableEntries", l: Limits{MaxInitialTableEntries: 9}, over: (&gen{tables: [][]byte{tbl(5), tbl(5)}}).bytes(), at: (&gen{tables: [][]byte{tbl(5), tbl(4)}}).bytes(),
			value: 10, max: 9, where: "table 1 (at offset 0x%x)", off: func(t *testing.T, w []byte) int { return sectionOffset(t, w, wasmbin.SectionIDTable) + 3 + 4 }, what: "brings the tables' initial sizes to 10 entries"},
		{limit: "MaxFunctionBytes", l: Limits{MaxFunctionBytes: 10}, over: funcsModule(ret0(repeat([]byte{0x01}, 7))), at: funcsModule(ret0(repeat([]byte{0x01}, 6))),
			value: 11, max: 10, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has 11 bytes"},
		{limit: "MaxLocals", l: Limits{MaxLocals: 10}, over: funcsModule(body([][2]uint64{{3, 0x7f}, {7, 0x7e}}, finish(nil))), at: funcsModule(body([][2]uint64{{3, 0x7f}, {6, 0x7e}}, finish(nil))),
			value: 11, max: 10, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "declares 11 locals (parameters included)"},
		{limit: "MaxNesting", l: Limits{MaxNesting: 4}, over: funcsModule(nested(4)), at: funcsModule(nested(3)),
			value: 5, max: 4, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "nests control structures 5 deep (at offset 0x%x)"},
		{limit: "MaxBrTableTargets", l: Limits{MaxBrTableTargets: 4}, over: funcsModule(brTable(5)), at: funcsModule(brTable(4)),
			value: 5, max: 4, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has a br_table of 5 targets (at offset 0x%x)"},
		{limit: "MaxLoops", l: Limits{MaxLoops: 2}, over: funcsModule(ret0(repeat(cat(opLoop, opEnd), 3))), at: funcsModule(ret0(repeat(cat(opLoop, opEnd), 2))),
			value: 3, max: 2, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has more than 2 loops (loop at offset 0x%x)"},
		{limit: "MaxInstructions", l: Limits{MaxInstructions: 5}, over: funcsModule(ret0(repeat([]byte{0x01}, 4))), at: funcsModule(ret0(repeat([]byte{0x01}, 3))),
			value: 6, max: 5, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has 6 instructions"},
		{limit: "MaxFlowUnits", l: Limits{MaxFlowUnits: 5}, over: funcsModule(ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 5))), at: funcsModule(ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 4))),
			value: 6, max: 5, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has more than 5 control-flow units (at offset 0x%x)"},
		{limit: "MaxFlowWork", l: Limits{MaxFlowWork: 20}, over: funcsModule(ret0(opNops(3)), ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 4))), at: funcsModule(ret0(opNops(3)), ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 3))),
			value: 26, max: 20, where: "function 1 (body at offset 0x%x)", off: bodyOff(1), what: "brings the sum of squared control-flow units over the functions to %d"},
		{limit: "MaxBulkInstructions", l: Limits{MaxBulkInstructions: 3},
			over: funcsModule(ret0(bulkFill(2)), ret0(bulkFill(2))), at: funcsModule(ret0(bulkFill(2)), ret0(bulkFill(1))),
			value: 4, max: 3, where: "function 1 (body at offset 0x%x)", off: bodyOff(1), what: "brings the bulk memory and table instructions and memory.grow to 4 (at offset 0x%x)"},
		{limit: "MaxModuleFlowUnits", l: Limits{MaxModuleFlowUnits: 5},
			over:  funcsModule(ret0(opLocalGet(0), opBrIf(0)), ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 3))),
			at:    funcsModule(ret0(opLocalGet(0), opBrIf(0)), ret0(repeat(cat(opLocalGet(0), opBrIf(0)), 2))),
			value: 5 + 1, max: 5, where: "function 1 (body at offset 0x%x)", off: bodyOff(1), what: "brings the control-flow units over the module to 6"},
		{limit: "MaxMemoryAccesses", l: Limits{MaxMemoryAccesses: 2},
			over: funcsModule(ret0(loads(3))), at: funcsModule(ret0(loads(2))),
			value: 3, max: 2, where: "function 0 (body at offset 0x%x)", off: bodyOff(0), what: "has 3 memory and table accesses"},
		{limit: "MaxModuleMemoryAccesses", l: Limits{MaxModuleMemoryAccesses: 3},
			over: funcsModule(ret0(loads(2)), ret0(loads(2))), at: funcsModule(ret0(loads(2)), ret0(loads(1))),
			value: 4, max: 3, where: "function 1 (body at offset 0x%x)", off: bodyOff(1), what: "brings the memory and table accesses over the module to 4"},
		// (locals + the result + 2)² × (2 checks × 2 predecessors): 9² × 4 = 324, 10² × 4 = 400.
		{limit: "MaxLocalsWork", l: Limits{MaxLocalsWork: 399},
			over: funcsModule(body([][2]uint64{{6, 0x7f}}, finish(nil))), at: funcsModule(body([][2]uint64{{5, 0x7f}}, finish(nil))),
			value: 400, max: 399, where: "function 0 (body at offset 0x%x)", off: bodyOff(0),
			what: "has 10 values (locals and block arity), 4 join predecessors, 0 walks and 0 read walks: locals work 400"},
		{limit: "MaxModuleLocalsWork", l: Limits{MaxModuleLocalsWork: 600},
			over:  funcsModule(body([][2]uint64{{5, 0x7f}}, finish(nil)), body([][2]uint64{{5, 0x7e}}, finish(nil))),
			at:    funcsModule(body([][2]uint64{{5, 0x7f}}, finish(nil)), body([][2]uint64{{4, 0x7e}}, finish(nil))),
			value: 648, max: 600, where: "function 1 (body at offset 0x%x)", off: bodyOff(1), what: "brings the locals work over the module to 648"},
	} {
		t.Run(c.limit, func(t *testing.T) {
			if _, err := Check(c.at, c.l); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := Check(c.over, c.l)
			var r *Rejection
			if !errors.As(err, &r) || !errors.Is(err, ErrRejected) || errors.Is(err, ErrMalformed) {
				t.Fatalf("over the limit: %v", err)
			}
			where := c.where
			if c.off != nil {
				where = fmt.Sprintf(c.where, c.off(t, c.over))
			}
			what := c.what
			if strings.Contains(what, "%d") {
				what = fmt.Sprintf(what, r.Value)
			} else if strings.Contains(what, "%x") {
				// The instruction's offset, inside the body.
				what, _, _ = strings.Cut(what, "0x%x")
				if !strings.HasPrefix(r.What, what) {
					t.Errorf("what %q, want %q…", r.What, what)
				} else if at, err := strconv.ParseInt(strings.TrimSuffix(r.What[len(what):], ")"), 0, 64); err != nil || int(at) != r.Offset || r.Offset <= c.off(t, c.over) {
					t.Errorf("instruction offset in %q: %v (body at %d, module %d bytes)", r.What, err, r.Offset, len(c.over))
				}
				if !strings.HasPrefix(r.What, what) {
					t.Errorf("what %q, want %q…", r.What, what)
				}
				what = r.What
			}
			want := fmt.Sprintf("module rejected: %s %s; limit %s = %d", where, what, c.limit, c.max)
			if err.Error() != want || r.Limit != c.limit || r.Max != uint64(c.max) || r.Value != c.value {
				t.Errorf("error %q\n  want %q (value %d, want %d)", err, want, r.Value, c.value)
			}
		})
	}
}

// bulkFill is n memory.fill of length 0 at 0.
func bulkFill(n int) []byte {
	return repeat(cat(opI32Const(0), opI32Const(0), opI32Const(0), []byte{0xfc, 0x0b, 0x00}), n)
}

// loads is n loads of the word at address 0, dropped.
func loads(n int) []byte { return repeat(cat(opI32Const(0), []byte{0x28, 0x02, 0x00, 0x1a}), n) }

func opNops(n int) []byte { return repeat([]byte{0x01}, n) }

func withTypesBytes(types ...[]byte) []byte { return (&gen{types: types}).bytes() }

func fnImport(field string) []byte { return cat(name("env"), name(field), []byte{0x00, 0x00}) }

func secOff(id byte) func(*testing.T, []byte) int {
	return func(t *testing.T, w []byte) int { return sectionOffset(t, w, id) }
}

func bodyOff(i int) func(*testing.T, []byte) int {
	return func(t *testing.T, w []byte) int { return codeOffset(t, w, i) }
}

// elemSegOff is the offset of element segment i (the segments of
// elemModule are 1 + 1 + count bytes... read them).
func elemSegOff(i int) func(*testing.T, []byte) int {
	return func(t *testing.T, w []byte) int {
		off := sectionOffset(t, w, wasmbin.SectionIDElement)
		it, _ := wasmbin.NewSections(w)
		var s wasmbin.Section
		for ok, _ := it.Next(&s); ok && s.Offset != off; ok, _ = it.Next(&s) {
		}
		r := s.Reader()
		r.U32()
		for ; i > 0; i-- {
			if _, err := r.ReadElementSegment(); err != nil {
				t.Fatal(err)
			}
		}
		return r.Offset()
	}
}

// tagModule has n tags of type 0, (func (param i32)).
func tagModule(n int) []byte {
	tags := make([][]byte, n)
	for i := range tags {
		tags[i] = []byte{0x00, 0x00}
	}
	return module(section(wasmbin.SectionIDType, vec(funcType([]byte{0x7f}, nil))), section(wasmbin.SectionIDTag, vec(tags...)))
}

// elemModule has one function (so function index 0 exists) and the
// segments.
func elemModule(segs ...[]byte) []byte {
	g := gen{types: [][]byte{i32i32}, funcs: []uint32{0}, codes: [][]byte{ret0()}, elems: segs}
	return g.bytes()
}

// TestLimitsKey: limits that check alike share a key (a zero field is its
// default), and a different limit has another.
func TestLimitsKey(t *testing.T) {
	withDefault := Limits{MaxTableEntries: DefaultLimits.MaxTableEntries}
	if (Limits{}).Key() != withDefault.Key() || (Limits{}).Key() != DefaultLimits.Key() {
		t.Fatal("a zero limit and its default have different keys")
	}
	seen := map[string]Limits{}
	for _, l := range []Limits{{}, {MaxTableEntries: 1000}, {MaxTableEntries: 1001}, {MaxModuleBytes: 1 << 20}} {
		k := l.Key()
		if prev, ok := seen[k]; ok {
			t.Fatalf("%+v and %+v share the key %s", prev, l, k)
		}
		seen[k] = l
		if len(k) != 16 {
			t.Fatalf("key %q is not 16 hex digits", k)
		}
	}
}
