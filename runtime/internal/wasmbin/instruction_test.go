package wasmbin

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// walkAll walks expr and returns its instructions.
func walkAll(expr []byte) ([]Instruction, error) {
	w := NewWalker(expr, 0)
	var out []Instruction
	for {
		var in Instruction
		ok, err := w.Next(&in)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, in)
	}
}

func TestInstructionImmediates(t *testing.T) {
	u := func(v uint32) []byte { return AppendUint32(nil, v) }
	for _, c := range []struct {
		name string
		code []byte // one instruction
		want Instruction
	}{
		{"block", []byte{0x02, 0x40}, Instruction{Opcode: OpcodeBlock}},
		{"loop i32", []byte{0x03, 0x7f}, Instruction{Opcode: OpcodeLoop, BlockType: BlockType{Kind: BlockValue, Value: ValueTypeI32}}},
		{"if typeidx", []byte{0x04, 0x85, 0x01}, Instruction{Opcode: OpcodeIf, BlockType: BlockType{Kind: BlockTypeIndex, Index: 133}}},
		{"block (ref null func)", []byte{0x02, 0x63, 0x70}, Instruction{Opcode: OpcodeBlock, BlockType: BlockType{Kind: BlockValue, Value: ValueTypeRefNull, Heap: HeapTypeFunc}}},
		{"try", []byte{0x06, 0x40}, Instruction{Opcode: OpcodeTry}},
		{"br", []byte{0x0c, 0x03}, Instruction{Opcode: OpcodeBr, Index: 3}},
		{"br_if", []byte{0x0d, 0x81, 0x01}, Instruction{Opcode: OpcodeBrIf, Index: 129}},
		{"br_table", []byte{0x0e, 0x02, 0x00, 0x01, 0x02}, Instruction{Opcode: OpcodeBrTable, Count: 2, Bytes: []byte{0x00, 0x01}, Index: 2}},
		{"call", cat([]byte{0x10}, u(70000)), Instruction{Opcode: OpcodeCall, Index: 70000}},
		{"call_indirect", []byte{0x11, 0x05, 0x01}, Instruction{Opcode: OpcodeCallIndirect, Index: 5, Index2: 1}},
		{"return_call", []byte{0x12, 0x07}, Instruction{Opcode: OpcodeReturnCall, Index: 7}},
		{"return_call_indirect", []byte{0x13, 0x02, 0x00}, Instruction{Opcode: OpcodeReturnCallIndirect, Index: 2}},
		{"call_ref", []byte{0x14, 0x04}, Instruction{Opcode: OpcodeCallRef, Index: 4}},
		{"return_call_ref", []byte{0x15, 0x04}, Instruction{Opcode: OpcodeReturnCallRef, Index: 4}},
		{"throw", []byte{0x08, 0x01}, Instruction{Opcode: OpcodeThrow, Index: 1}},
		{"rethrow", []byte{0x09, 0x00}, Instruction{Opcode: OpcodeRethrow}},
		{"throw_ref", []byte{0x0a}, Instruction{Opcode: OpcodeThrowRef}},
		{"catch", []byte{0x07, 0x02}, Instruction{Opcode: OpcodeCatch, Index: 2}},
		{"catch_all", []byte{0x19}, Instruction{Opcode: OpcodeCatchAll}},
		{"select t", []byte{0x1c, 0x01, 0x7e}, Instruction{Opcode: OpcodeTypedSelect, Count: 1, Bytes: []byte{0x7e}}},
		{"local.tee", []byte{0x22, 0x09}, Instruction{Opcode: OpcodeLocalTee, Index: 9}},
		{"global.set", []byte{0x24, 0x01}, Instruction{Opcode: OpcodeGlobalSet, Index: 1}},
		{"table.get", []byte{0x25, 0x01}, Instruction{Opcode: OpcodeTableGet, Index: 1}},
		{"i64.load", []byte{0x29, 0x03, 0x10}, Instruction{Opcode: 0x29, MemArg: MemArg{Align: 3, Offset: 16}}},
		{"i32.store multi-memory", []byte{0x36, 0x42, 0x01, 0x08}, Instruction{Opcode: 0x36, MemArg: MemArg{Align: 2, Memory: 1, Offset: 8}}},
		{"memory.grow", []byte{0x40, 0x00}, Instruction{Opcode: OpcodeMemoryGrow}},
		{"i32.const -1", []byte{0x41, 0x7f}, Instruction{Opcode: OpcodeI32Const, Value: 0xffffffffffffffff}},
		{"i64.const", []byte{0x42, 0x80, 0x01}, Instruction{Opcode: OpcodeI64Const, Value: 128}},
		{"f32.const", []byte{0x43, 0x00, 0x00, 0x80, 0x3f}, Instruction{Opcode: OpcodeF32Const, Value: 0x3f800000}},
		{"f64.const", []byte{0x44, 1, 2, 3, 4, 5, 6, 7, 8}, Instruction{Opcode: OpcodeF64Const, Value: 0x0807060504030201}},
		{"i32.add", []byte{0x6a}, Instruction{Opcode: OpcodeI32Add}},
		{"i64.extend32_s", []byte{0xc4}, Instruction{Opcode: OpcodeI64Extend32S}},
		{"ref.null extern", []byte{0xd0, 0x6f}, Instruction{Opcode: OpcodeRefNull, Heap: HeapTypeExtern}},
		{"ref.null typeidx", []byte{0xd0, 0x03}, Instruction{Opcode: OpcodeRefNull, Heap: 3}},
		{"ref.is_null", []byte{0xd1}, Instruction{Opcode: OpcodeRefIsNull}},
		{"ref.func", []byte{0xd2, 0x05}, Instruction{Opcode: OpcodeRefFunc, Index: 5}},
		{"ref.as_non_null", []byte{0xd4}, Instruction{Opcode: OpcodeRefAsNonNull}},
		{"br_on_null", []byte{0xd5, 0x01}, Instruction{Opcode: OpcodeBrOnNull, Index: 1}},
		{"br_on_non_null", []byte{0xd6, 0x02}, Instruction{Opcode: OpcodeBrOnNonNull, Index: 2}},
		{"i32.trunc_sat_f32_s", []byte{0xfc, 0x00}, Instruction{Opcode: OpcodePrefixMisc}},
		{"memory.init", []byte{0xfc, 0x08, 0x03, 0x00}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscMemoryInit, Index: 3}},
		{"data.drop", []byte{0xfc, 0x09, 0x03}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscDataDrop, Index: 3}},
		{"memory.copy", []byte{0xfc, 0x0a, 0x00, 0x01}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscMemoryCopy, Index2: 1}},
		{"memory.fill", []byte{0xfc, 0x0b, 0x00}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscMemoryFill}},
		{"table.init", []byte{0xfc, 0x0c, 0x02, 0x01}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscTableInit, Index: 2, Index2: 1}},
		{"elem.drop", []byte{0xfc, 0x0d, 0x02}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscElemDrop, Index: 2}},
		{"table.copy", []byte{0xfc, 0x0e, 0x01, 0x02}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscTableCopy, Index: 1, Index2: 2}},
		{"table.grow", []byte{0xfc, 0x0f, 0x01}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscTableGrow, Index: 1}},
		{"table.fill", []byte{0xfc, 0x11, 0x00}, Instruction{Opcode: OpcodePrefixMisc, Sub: MiscTableFill}},
		{"v128.load", []byte{0xfd, 0x00, 0x04, 0x00}, Instruction{Opcode: OpcodePrefixVec, MemArg: MemArg{Align: 4}}},
		{"v128.const", cat([]byte{0xfd, 0x0c}, bytes.Repeat([]byte{7}, 16)), Instruction{Opcode: OpcodePrefixVec, Sub: VecV128Const, Bytes: bytes.Repeat([]byte{7}, 16)}},
		{"i8x16.extract_lane_s", []byte{0xfd, 0x15, 0x03}, Instruction{Opcode: OpcodePrefixVec, Sub: 0x15, Lane: 3}},
		{"v128.load8_lane", []byte{0xfd, 0x54, 0x00, 0x00, 0x0f}, Instruction{Opcode: OpcodePrefixVec, Sub: 0x54, Lane: 15}},
		{"v128.load64_zero", []byte{0xfd, 0x5d, 0x03, 0x08}, Instruction{Opcode: OpcodePrefixVec, Sub: 0x5d, MemArg: MemArg{Align: 3, Offset: 8}}},
		{"i32x4.add (two-byte sub)", []byte{0xfd, 0xae, 0x01}, Instruction{Opcode: OpcodePrefixVec, Sub: 0xae}},
		{"relaxed dot", []byte{0xfd, 0x93, 0x02}, Instruction{Opcode: OpcodePrefixVec, Sub: VecLast}},
		{"memory.atomic.notify", []byte{0xfe, 0x00, 0x02, 0x00}, Instruction{Opcode: OpcodePrefixAtomic, MemArg: MemArg{Align: 2}}},
		{"memory.atomic.wait32", []byte{0xfe, 0x01, 0x02, 0x04}, Instruction{Opcode: OpcodePrefixAtomic, Sub: AtomicWait32, MemArg: MemArg{Align: 2, Offset: 4}}},
		{"atomic.fence", []byte{0xfe, 0x03, 0x00}, Instruction{Opcode: OpcodePrefixAtomic, Sub: AtomicFence}},
		{"i64.atomic.rmw32.cmpxchg_u", []byte{0xfe, 0x4e, 0x02, 0x00}, Instruction{Opcode: OpcodePrefixAtomic, Sub: AtomicLast, MemArg: MemArg{Align: 2}}},
	} {
		expr := append(append([]byte(nil), c.code...), 0x0b)
		if c.want.OpensBlock() {
			expr = append(expr, 0x0b)
		}
		got, err := walkAll(expr)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		c.want.End = len(c.code)
		if c.want.Bytes == nil {
			got[0].Bytes = nil
		}
		if g := got[0]; g.Opcode != c.want.Opcode || g.Sub != c.want.Sub || g.Offset != 0 || g.End != c.want.End ||
			g.BlockType != c.want.BlockType || g.Index != c.want.Index || g.Index2 != c.want.Index2 || g.MemArg != c.want.MemArg ||
			g.Lane != c.want.Lane || g.Value != c.want.Value || g.Heap != c.want.Heap || g.Count != c.want.Count || !bytes.Equal(g.Bytes, c.want.Bytes) {
			t.Errorf("%s: got %+v\nwant %+v", c.name, g, c.want)
		}
	}
}

func TestBrTableTargetsAndCatches(t *testing.T) {
	ins, err := walkAll([]byte{0x0e, 0x03, 0x00, 0x81, 0x01, 0x02, 0x05, 0x0b})
	if err != nil {
		t.Fatal(err)
	}
	var got []uint32
	ins[0].Targets(func(d uint32) bool { got = append(got, d); return true })
	if !slices.Equal(got, []uint32{0, 129, 2}) || ins[0].Index != 5 {
		t.Errorf("targets %v default %d", got, ins[0].Index)
	}
	// try_table (result i32) (catch 1 0) (catch_ref 2 1) (catch_all 2) (catch_all_ref 3)
	ins, err = walkAll([]byte{0x1f, 0x7f, 0x04, 0x00, 0x01, 0x00, 0x01, 0x02, 0x01, 0x02, 0x02, 0x03, 0x03, 0x0b, 0x0b})
	if err != nil {
		t.Fatal(err)
	}
	var cs []Catch
	ins[0].Catches(func(c Catch) bool { cs = append(cs, c); return true })
	want := []Catch{{CatchTag, 1, 0}, {CatchTagRef, 2, 1}, {CatchAllLabel, 0, 2}, {CatchAllRefLbl, 0, 3}}
	if !slices.Equal(cs, want) {
		t.Errorf("catches %v", cs)
	}
}

func TestWalkerStructure(t *testing.T) {
	// block; loop; if; else; end; end; try; catch 0; delegate... no: try; delegate 0; end(block); end(func)
	expr := []byte{0x02, 0x40, 0x03, 0x40, 0x41, 0x00, 0x04, 0x40, 0x05, 0x0b, 0x0b, 0x06, 0x40, 0x18, 0x00, 0x0b, 0x0b}
	w := NewWalker(expr, 10)
	var depths []int
	pos := 10
	for {
		var in Instruction
		ok, err := w.Next(&in)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if in.Offset != pos {
			t.Fatalf("instruction at %d, want %d", in.Offset, pos)
		}
		pos = in.End
		depths = append(depths, w.Depth())
	}
	if pos != 10+len(expr) {
		t.Errorf("ended at %d", pos)
	}
	if want := []int{2, 3, 3, 4, 4, 3, 2, 3, 2, 1, 0}; !slices.Equal(depths, want) {
		t.Errorf("depths %v, want %v", depths, want)
	}
}

func TestWalkerErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		expr []byte
		want string
	}{
		{"no end", []byte{0x01}, "no end"},
		{"empty", nil, "no end"},
		{"after end", []byte{0x0b, 0x01}, "after the end"},
		{"unassigned 0x27", []byte{0x27, 0x0b}, "unknown opcode 0x27"},
		{"GC prefix", []byte{0xfb, 0x00, 0x0b}, "unknown opcode 0xfb"},
		{"unknown 0xfc", []byte{0xfc, 0x13, 0x0b}, "unknown opcode 0xfc 19"},
		{"unassigned SIMD", []byte{0xfd, 0x9a, 0x01, 0x0b}, "unknown opcode 0xfd 154"},
		{"past relaxed SIMD", []byte{0xfd, 0x94, 0x02, 0x0b}, "unknown opcode 0xfd 276"},
		{"unknown atomic", []byte{0xfe, 0x04, 0x0b}, "unknown opcode 0xfe 4"},
		{"atomic.fence flag", []byte{0xfe, 0x03, 0x01, 0x0b}, "fence"},
		{"truncated memarg", []byte{0x28, 0x02}, "u64"},
		{"truncated f64", []byte{0x44, 0x00, 0x00}, "bytes expected"},
		{"br_table too long", []byte{0x0e, 0xff, 0xff, 0x03, 0x0b}, "vector of"},
		{"bad catch kind", []byte{0x1f, 0x40, 0x01, 0x04, 0x00, 0x0b, 0x0b}, "catch kind"},
		{"negative block type", []byte{0x02, 0xc0, 0x7f, 0x0b}, "block type index"},
		{"bad value type", []byte{0x02, 0x5f, 0x0b}, "value type 0x5f"},
		{"GC heap type", []byte{0xd0, 0x6e, 0x0b}, "heap type"},
		{"delegate at top", []byte{0x18, 0x00}, "delegate outside"},
		{"s32 overflow", []byte{0x41, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b}, "overflows"},
		{"memarg flags", []byte{0x28, 0x80, 0x01, 0x00, 0x0b}, "memarg flags"},
	} {
		_, err := walkAll(c.expr)
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestConstExpr(t *testing.T) {
	r := NewReader([]byte{0x41, 0x05, 0x23, 0x00, 0x6a, 0x0b, 0xaa}, 0)
	e, off, err := r.ReadConstExpr()
	if err != nil || off != 0 || len(e) != 6 || r.Offset() != 6 {
		t.Errorf("extended const: %x %d %v at %d", e, off, err, r.Offset())
	}
	r = NewReader([]byte{0x20, 0x00, 0x0b}, 0)
	if _, _, err := r.ReadConstExpr(); err == nil {
		t.Errorf("local.get in a constant expression")
	}
	for _, bad := range [][]byte{{0x41, 0x00}, {0x41, 0x80}, {0x23}, {0x41, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b}} {
		r = NewReader(bad, 0)
		if _, _, err := r.ReadConstExpr(); err == nil {
			t.Errorf("constant expression %x accepted", bad)
		}
	}
	for _, good := range [][]byte{{0x41, 0x7f, 0x0b}, {0x23, 0x81, 0x01, 0x0b}, {0x41, 0x01, 0x41, 0x02, 0x6b, 0x0b}, {0x42, 0x00, 0x0b}} {
		r = NewReader(append(good, 0x99), 0)
		if e, _, err := r.ReadConstExpr(); err != nil || len(e) != len(good) || r.Len() != 1 {
			t.Errorf("constant expression %x: %x %v", good, e, err)
		}
	}
}

func TestReadCodeCountsLocalsWithoutAllocating(t *testing.T) {
	// 2 groups: 4294967295 i32 and 4294967295 i64; then end.
	body := []byte{0x02, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7e, 0x0b}
	entry := append(AppendUint32(nil, uint32(len(body))), body...)
	var c Code
	allocs := testing.AllocsPerRun(10, func() {
		r := NewReader(entry, 0)
		var err error
		if c, err = r.ReadCode(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || c.LocalGroups != 2 || c.Locals != 2*(1<<32-1) || len(c.Expr) != 1 {
		t.Errorf("allocs %v, code %+v", allocs, c)
	}
}

func TestEntries(t *testing.T) {
	// Element segments of every flags value.
	for flags, seg := range [][]byte{
		{0x00, 0x41, 0x00, 0x0b, 0x02, 0x00, 0x01},
		{0x01, 0x00, 0x01, 0x00},
		{0x02, 0x01, 0x41, 0x00, 0x0b, 0x00, 0x01, 0x00},
		{0x03, 0x00, 0x01, 0x00},
		{0x04, 0x41, 0x00, 0x0b, 0x01, 0xd2, 0x00, 0x0b},
		{0x05, 0x70, 0x01, 0xd0, 0x70, 0x0b},
		{0x06, 0x01, 0x41, 0x00, 0x0b, 0x70, 0x01, 0xd2, 0x00, 0x0b},
		{0x07, 0x70, 0x01, 0xd2, 0x00, 0x0b},
	} {
		r := NewReader(seg, 0)
		s, err := r.ReadElementSegment()
		if err != nil || !r.Done() || s.Flags != uint32(flags) || s.Exprs != (flags >= 4) {
			t.Errorf("element flags %d: %+v %v", flags, s, err)
		}
	}
	for _, seg := range [][]byte{{0x00, 0x41, 0x00, 0x0b, 0x01, 0xaa}, {0x01, 0x03, 'a', 'b', 'c'}, {0x02, 0x01, 0x41, 0x00, 0x0b, 0x00}} {
		r := NewReader(seg, 0)
		if _, err := r.ReadDataSegment(); err != nil || !r.Done() {
			t.Errorf("data %x: %v", seg, err)
		}
	}
	// Limits: shared memory with max; 64-bit.
	r := NewReader([]byte{0x03, 0x01, 0x02, 0x04, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 0)
	l, err := r.ReadLimits()
	if err != nil || !l.Shared() || l.Max != 2 || l.MaxOffset != 2 {
		t.Errorf("limits %+v %v", l, err)
	}
	l, err = r.ReadLimits()
	if err != nil || !l.Is64() || l.Min != 1<<35 {
		t.Errorf("64-bit limits %+v %v", l, err)
	}
	r = NewReader([]byte{0x08, 0x01}, 0)
	if _, err := r.ReadLimits(); err == nil {
		t.Errorf("custom page size flag accepted")
	}
	// A table with an initialiser.
	r = NewReader([]byte{0x40, 0x00, 0x64, 0x70, 0x00, 0x01, 0xd2, 0x00, 0x0b}, 0)
	if tb, err := r.ReadTable(); err != nil || !r.Done() || tb.Type.Elem != ValueTypeRef || len(tb.Init) != 3 {
		t.Errorf("table %+v %v", tb, err)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
