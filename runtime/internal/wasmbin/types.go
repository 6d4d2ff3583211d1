package wasmbin

// ValueType is a value type's first byte.
type ValueType = byte

// Value types. A reference type with a heap type is ValueTypeRefNull or
// ValueTypeRef followed by the heap type (s33).
const (
	ValueTypeI32       ValueType = 0x7f
	ValueTypeI64       ValueType = 0x7e
	ValueTypeF32       ValueType = 0x7d
	ValueTypeF64       ValueType = 0x7c
	ValueTypeV128      ValueType = 0x7b
	ValueTypeFuncref   ValueType = 0x70
	ValueTypeExternref ValueType = 0x6f
	ValueTypeExnref    ValueType = 0x69 // exception handling
	ValueTypeRefNull   ValueType = 0x63 // (ref null ht), typed function references
	ValueTypeRef       ValueType = 0x64 // (ref ht), typed function references
)

// BlockTypeEmpty is the block type of a block with no parameters or
// results.
const BlockTypeEmpty byte = 0x40

// Abstract heap types, as the s33 they decode to. A heap type >= 0 is a
// type index.
const (
	HeapTypeFunc     int64 = -0x10 // 0x70
	HeapTypeExtern   int64 = -0x11 // 0x6f
	HeapTypeExn      int64 = -0x17 // 0x69
	HeapTypeNoExn    int64 = -0x0c // 0x74
	HeapTypeNoFunc   int64 = -0x0d // 0x73
	HeapTypeNoExtern int64 = -0x0e // 0x72
)

// ReadHeapType reads a heap type (s33): an abstract one of function
// references and exception handling, or a type index. The GC proposal's
// abstract types (any, eq, i31, struct, array, none) are refused.
func (r *Reader) ReadHeapType() (int64, error) {
	off := r.Offset()
	ht, err := r.S33()
	if err != nil {
		return 0, err
	}
	if ht >= 0 {
		return ht, nil
	}
	switch ht {
	case HeapTypeFunc, HeapTypeExtern, HeapTypeExn, HeapTypeNoExn, HeapTypeNoFunc, HeapTypeNoExtern:
		return ht, nil
	}
	return 0, Errorf(off, "unsupported heap type %d", ht)
}

// ReadValueType reads a value type and returns its first byte (and, for
// ValueTypeRefNull and ValueTypeRef, its heap type).
func (r *Reader) ReadValueType() (ValueType, int64, error) {
	off := r.Offset()
	t, err := r.Byte()
	if err != nil {
		return 0, 0, err
	}
	switch t {
	case ValueTypeI32, ValueTypeI64, ValueTypeF32, ValueTypeF64, ValueTypeV128,
		ValueTypeFuncref, ValueTypeExternref, ValueTypeExnref:
		return t, 0, nil
	case ValueTypeRefNull, ValueTypeRef:
		ht, err := r.ReadHeapType()
		return t, ht, err
	}
	return 0, 0, Errorf(off, "unknown value type 0x%02x", t)
}

// ReadRefType reads a reference type: funcref, externref, exnref or
// (ref null? ht).
func (r *Reader) ReadRefType() (ValueType, int64, error) {
	off := r.Offset()
	t, ht, err := r.ReadValueType()
	if err != nil {
		return 0, 0, err
	}
	switch t {
	case ValueTypeFuncref, ValueTypeExternref, ValueTypeExnref, ValueTypeRefNull, ValueTypeRef:
		return t, ht, nil
	}
	return 0, 0, Errorf(off, "value type 0x%02x is not a reference type", t)
}

// BlockKind says which form a block type takes.
type BlockKind byte

const (
	// BlockEmpty: no parameters, no results (0x40).
	BlockEmpty BlockKind = iota
	// BlockValue: no parameters, one result of BlockType.Value.
	BlockValue
	// BlockTypeIndex: the parameters and results of function type
	// BlockType.Index (multi-value).
	BlockTypeIndex
)

// BlockType is the type of a block, loop, if, try or try_table.
type BlockType struct {
	Kind BlockKind
	// Value and Heap: the result type of a BlockValue.
	Value ValueType
	Heap  int64
	// Index: the type index of a BlockTypeIndex.
	Index uint32
}

// ReadBlockType reads a block type: 0x40, a value type, or a type index
// as a non-negative s33.
func (r *Reader) ReadBlockType() (BlockType, error) {
	off := r.Offset()
	c, err := r.Peek()
	if err != nil {
		return BlockType{}, err
	}
	switch {
	case c == BlockTypeEmpty:
		r.pos++
		return BlockType{Kind: BlockEmpty}, nil
	case c&0xc0 == 0x40: // one byte, negative as s33: a value type
		t, ht, err := r.ReadValueType()
		return BlockType{Kind: BlockValue, Value: t, Heap: ht}, err
	}
	idx, err := r.S33()
	if err != nil {
		return BlockType{}, err
	}
	if idx < 0 || idx > 1<<32-1 {
		return BlockType{}, Errorf(off, "block type index %d out of range", idx)
	}
	return BlockType{Kind: BlockTypeIndex, Index: uint32(idx)}, nil
}

// Limits flag bits.
const (
	LimitsHasMax byte = 0x01
	LimitsShared byte = 0x02 // threads (memories only)
	LimitsIs64   byte = 0x04 // memory64, table64
)

// Limits are a memory's (in pages) or a table's (in elements) limits.
type Limits struct {
	// Flags is the flags byte; FlagsOffset its offset.
	Flags       byte
	FlagsOffset int
	Min, Max    uint64
	// MinOffset and MaxOffset are the offsets of the min and max numbers
	// (MaxOffset -1 without a max); End the offset after the limits.
	MinOffset, MaxOffset, End int
}

// HasMax, Shared and Is64 report the flags.
func (l *Limits) HasMax() bool { return l.Flags&LimitsHasMax != 0 }
func (l *Limits) Shared() bool { return l.Flags&LimitsShared != 0 }
func (l *Limits) Is64() bool   { return l.Flags&LimitsIs64 != 0 }

// ReadLimits reads limits. Flags beyond bits 0-2 (custom page sizes) are
// refused; min and max are u64 with the 64-bit flag, u32 otherwise.
func (r *Reader) ReadLimits() (Limits, error) {
	l := Limits{FlagsOffset: r.Offset(), MaxOffset: -1}
	var err error
	if l.Flags, err = r.Byte(); err != nil {
		return l, err
	}
	if l.Flags&^(LimitsHasMax|LimitsShared|LimitsIs64) != 0 {
		return l, Errorf(l.FlagsOffset, "unsupported limits flags 0x%02x", l.Flags)
	}
	read := func() (uint64, error) {
		if l.Is64() {
			return r.U64()
		}
		v, err := r.U32()
		return uint64(v), err
	}
	l.MinOffset = r.Offset()
	if l.Min, err = read(); err != nil {
		return l, err
	}
	if l.HasMax() {
		l.MaxOffset = r.Offset()
		if l.Max, err = read(); err != nil {
			return l, err
		}
	}
	l.End = r.Offset()
	return l, nil
}

// FuncType is a function type's parameter and result counts.
type FuncType struct {
	Params, Results uint32
}

// TypeFormFunc is the form byte of a function type.
const TypeFormFunc byte = 0x60

// ReadFuncType reads a type section entry, which must be a function type
// (0x60): the GC proposal's recursion groups, subtypes, structs and arrays
// are refused.
func (r *Reader) ReadFuncType() (FuncType, error) {
	off := r.Offset()
	form, err := r.Byte()
	if err != nil {
		return FuncType{}, err
	}
	if form != TypeFormFunc {
		return FuncType{}, Errorf(off, "unsupported type form 0x%02x (only function types)", form)
	}
	var ft FuncType
	for i := 0; i < 2; i++ {
		n, err := r.VecCount(1)
		if err != nil {
			return FuncType{}, err
		}
		for k := n; k > 0; k-- {
			if _, _, err := r.ReadValueType(); err != nil {
				return FuncType{}, err
			}
		}
		if i == 0 {
			ft.Params = n
		} else {
			ft.Results = n
		}
	}
	return ft, nil
}

// GlobalType is a global's value type and mutability.
type GlobalType struct {
	Value   ValueType
	Heap    int64
	Mutable bool
}

// ReadGlobalType reads a global type.
func (r *Reader) ReadGlobalType() (GlobalType, error) {
	t, ht, err := r.ReadValueType()
	if err != nil {
		return GlobalType{}, err
	}
	off := r.Offset()
	m, err := r.Byte()
	if err != nil {
		return GlobalType{}, err
	}
	if m > 1 {
		return GlobalType{}, Errorf(off, "unsupported global mutability 0x%02x", m)
	}
	return GlobalType{Value: t, Heap: ht, Mutable: m == 1}, nil
}

// TableType is a table's element type and limits.
type TableType struct {
	Elem   ValueType
	Heap   int64
	Limits Limits
}

// ReadTableType reads a table type.
func (r *Reader) ReadTableType() (TableType, error) {
	t, ht, err := r.ReadRefType()
	if err != nil {
		return TableType{}, err
	}
	l, err := r.ReadLimits()
	if err != nil {
		return TableType{}, err
	}
	off := l.FlagsOffset
	if l.Shared() {
		return TableType{}, Errorf(off, "shared tables are not supported")
	}
	return TableType{Elem: t, Heap: ht, Limits: l}, nil
}
