package wasmbin

// External kinds, in imports and exports.
const (
	ExternFunc   byte = 0x00
	ExternTable  byte = 0x01
	ExternMemory byte = 0x02
	ExternGlobal byte = 0x03
	ExternTag    byte = 0x04
)

// ExternKindName names an external kind ("func", "table", ...).
func ExternKindName(k byte) string {
	switch k {
	case ExternFunc:
		return "func"
	case ExternTable:
		return "table"
	case ExternMemory:
		return "memory"
	case ExternGlobal:
		return "global"
	case ExternTag:
		return "tag"
	}
	return "unknown"
}

// Import is an import section entry.
type Import struct {
	Offset       int
	Module, Name []byte
	Kind         byte
	// Index: a function's or tag's type index.
	Index  uint32
	Table  TableType
	Memory Limits
	Global GlobalType
}

// ReadImport reads an import.
func (r *Reader) ReadImport() (Import, error) {
	im := Import{Offset: r.Offset()}
	var err error
	if im.Module, err = r.Name(); err != nil {
		return im, err
	}
	if im.Name, err = r.Name(); err != nil {
		return im, err
	}
	off := r.Offset()
	if im.Kind, err = r.Byte(); err != nil {
		return im, err
	}
	switch im.Kind {
	case ExternFunc:
		im.Index, err = r.U32()
	case ExternTable:
		im.Table, err = r.ReadTableType()
	case ExternMemory:
		im.Memory, err = r.ReadLimits()
	case ExternGlobal:
		im.Global, err = r.ReadGlobalType()
	case ExternTag:
		im.Index, err = r.ReadTagType()
	default:
		err = Errorf(off, "unknown import kind 0x%02x", im.Kind)
	}
	return im, err
}

// ReadTagType reads a tag's type (attribute 0, exception, then a type
// index) and returns the type index.
func (r *Reader) ReadTagType() (uint32, error) {
	off := r.Offset()
	a, err := r.Byte()
	if err != nil {
		return 0, err
	}
	if a != 0 {
		return 0, Errorf(off, "unknown tag attribute 0x%02x", a)
	}
	return r.U32()
}

// Export is an export section entry.
type Export struct {
	Offset int
	Name   []byte
	Kind   byte
	Index  uint32
}

// ReadExport reads an export.
func (r *Reader) ReadExport() (Export, error) {
	ex := Export{Offset: r.Offset()}
	var err error
	if ex.Name, err = r.Name(); err != nil {
		return ex, err
	}
	off := r.Offset()
	if ex.Kind, err = r.Byte(); err != nil {
		return ex, err
	}
	if ex.Kind > ExternTag {
		return ex, Errorf(off, "unknown export kind 0x%02x", ex.Kind)
	}
	ex.Index, err = r.U32()
	return ex, err
}

// ReadConstExpr reads a constant expression through its end and returns
// its bytes (with the end) and their offset. Only the instructions a
// constant expression may hold are accepted: the constants, ref.null,
// ref.func, global.get, and the extended constant expressions' i32 and
// i64 add, sub and mul.
func (r *Reader) ReadConstExpr() ([]byte, int, error) {
	start, off := r.pos, r.Offset()
	// The common case, a data or element segment's offset: i32.const n
	// end, or global.get n end.
	if c, err := r.Peek(); err == nil && (c == OpcodeI32Const || c == OpcodeGlobalGet) {
		save := r.pos
		r.pos++
		var err error
		if c == OpcodeI32Const {
			_, err = r.S32()
		} else {
			_, err = r.U32()
		}
		if end, e := r.Peek(); err == nil && e == nil && end == OpcodeEnd {
			r.pos++
			return r.buf[start:r.pos], off, nil
		}
		r.pos = save // anything else: the general way, with its errors
	}
	w := Walker{r: NewReader(r.buf[r.pos:], off), depth: 1}
	var in Instruction
	for {
		ok, err := w.Next(&in)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		switch in.Opcode {
		case OpcodeI32Const, OpcodeI64Const, OpcodeF32Const, OpcodeF64Const, OpcodeRefNull, OpcodeRefFunc,
			OpcodeGlobalGet, OpcodeI32Add, OpcodeI32Sub, OpcodeI32Mul, OpcodeI64Add, OpcodeI64Sub, OpcodeI64Mul, OpcodeEnd:
		case OpcodePrefixVec:
			if in.Sub != VecV128Const {
				return nil, 0, Errorf(in.Offset, "instruction 0xfd %d in a constant expression", in.Sub)
			}
		default:
			return nil, 0, Errorf(in.Offset, "instruction 0x%02x in a constant expression", in.Opcode)
		}
		if in.Opcode == OpcodeEnd {
			break
		}
	}
	r.pos += w.r.pos
	return r.buf[start:r.pos], off, nil
}

// Element segment modes.
const (
	ElemActive      = 0
	ElemPassive     = 1
	ElemDeclarative = 2
)

// ElementSegment is an element section entry.
type ElementSegment struct {
	Offset int
	// Flags is the segment's flags (0-7), Mode its mode.
	Flags uint32
	Mode  int
	// Table and TableExpr (its offset expression, with OffsetExprOffset)
	// for an active segment.
	Table            uint32
	OffsetExpr       []byte
	OffsetExprOffset int
	// Count is the number of elements. Exprs says the items are constant
	// expressions; otherwise they are function indices (u32). Items are
	// their bytes, at ItemsOffset.
	Count       uint32
	Exprs       bool
	Items       []byte
	ItemsOffset int
}

// ReadElementSegment reads an element segment, every item included.
func (r *Reader) ReadElementSegment() (ElementSegment, error) {
	seg := ElementSegment{Offset: r.Offset()}
	var err error
	if seg.Flags, err = r.U32(); err != nil {
		return seg, err
	}
	if seg.Flags > 7 {
		return seg, Errorf(seg.Offset, "unknown element segment flags %d", seg.Flags)
	}
	// Bit 0: passive or declarative (bit 1 chooses); else active, with a
	// table index if bit 1. Bit 2: expressions, else function indices.
	switch {
	case seg.Flags&1 == 0:
		seg.Mode = ElemActive
	case seg.Flags&2 == 0:
		seg.Mode = ElemPassive
	default:
		seg.Mode = ElemDeclarative
	}
	seg.Exprs = seg.Flags&4 != 0
	if seg.Mode == ElemActive {
		if seg.Flags&2 != 0 {
			if seg.Table, err = r.U32(); err != nil {
				return seg, err
			}
		}
		if seg.OffsetExpr, seg.OffsetExprOffset, err = r.ReadConstExpr(); err != nil {
			return seg, err
		}
	}
	if seg.Mode != ElemActive || seg.Flags&2 != 0 {
		// An element kind (0x00, funcref) or a reference type.
		if seg.Exprs {
			if _, _, err := r.ReadRefType(); err != nil {
				return seg, err
			}
		} else {
			off := r.Offset()
			k, err := r.Byte()
			if err != nil {
				return seg, err
			}
			if k != 0 {
				return seg, Errorf(off, "unknown element kind 0x%02x", k)
			}
		}
	}
	minSize := 1 // a function index, or an expression's end at least
	if seg.Exprs {
		minSize = 2
	}
	if seg.Count, err = r.VecCount(minSize); err != nil {
		return seg, err
	}
	start := r.pos
	seg.ItemsOffset = r.Offset()
	for n := seg.Count; n > 0; n-- {
		if seg.Exprs {
			_, _, err = r.ReadConstExpr()
		} else {
			_, err = r.U32()
		}
		if err != nil {
			return seg, err
		}
	}
	seg.Items = r.buf[start:r.pos]
	return seg, nil
}

// DataSegment is a data section entry.
type DataSegment struct {
	Offset int
	Flags  uint32
	// Passive: a passive segment; else active, in Memory, at the offset
	// OffsetExpr computes.
	Passive          bool
	Memory           uint32
	OffsetExpr       []byte
	OffsetExprOffset int
	// Init is the segment's bytes, at InitOffset.
	Init       []byte
	InitOffset int
}

// ReadDataSegment reads a data segment.
func (r *Reader) ReadDataSegment() (DataSegment, error) {
	seg := DataSegment{Offset: r.Offset()}
	var err error
	if seg.Flags, err = r.U32(); err != nil {
		return seg, err
	}
	switch seg.Flags {
	case 0:
	case 1:
		seg.Passive = true
	case 2:
		if seg.Memory, err = r.U32(); err != nil {
			return seg, err
		}
	default:
		return seg, Errorf(seg.Offset, "unknown data segment flags %d", seg.Flags)
	}
	if !seg.Passive {
		if seg.OffsetExpr, seg.OffsetExprOffset, err = r.ReadConstExpr(); err != nil {
			return seg, err
		}
	}
	n, err := r.U32()
	if err != nil {
		return seg, err
	}
	seg.InitOffset = r.Offset()
	seg.Init, err = r.Bytes(uint64(n))
	return seg, err
}

// TableWithInit is the first byte of a table section entry with an
// initialiser (typed function references: 0x40 0x00, then the table type
// and the expression).
const TableWithInit byte = 0x40

// Table is a table section entry: a table type, and with the typed
// function references encoding (0x40 0x00) an initialiser expression.
type Table struct {
	Offset int
	Type   TableType
	Init   []byte
}

// ReadTable reads a table section entry.
func (r *Reader) ReadTable() (Table, error) {
	t := Table{Offset: r.Offset()}
	c, err := r.Peek()
	if err != nil {
		return t, err
	}
	withInit := c == 0x40
	if withInit {
		r.pos++
		off := r.Offset()
		z, err := r.Byte()
		if err != nil {
			return t, err
		}
		if z != 0 {
			return t, Errorf(off, "unknown table encoding 0x40 0x%02x", z)
		}
	}
	if t.Type, err = r.ReadTableType(); err != nil {
		return t, err
	}
	if withInit {
		t.Init, _, err = r.ReadConstExpr()
	}
	return t, err
}

// Code is a code section entry: a function body.
type Code struct {
	// Offset is that of the body's size; BodyOffset of its first byte.
	Offset, BodyOffset int
	Body               []byte
	// LocalGroups is the number of local declarations, Locals the number
	// of locals they declare (without the parameters).
	LocalGroups uint32
	Locals      uint64
	// Expr is the body's instructions, after the locals, at ExprOffset.
	Expr       []byte
	ExprOffset int
}

// ReadCode reads a function body and its local declarations (counting the
// locals, allocating nothing per local or group), leaving the
// instructions to a Walker.
func (r *Reader) ReadCode() (Code, error) {
	c := Code{Offset: r.Offset()}
	size, err := r.U32()
	if err != nil {
		return c, err
	}
	body, err := r.Sub(uint64(size))
	if err != nil {
		return c, err
	}
	c.BodyOffset = body.Offset()
	c.Body = body.buf
	if c.LocalGroups, err = body.VecCount(2); err != nil {
		return c, err
	}
	for n := c.LocalGroups; n > 0; n-- {
		k, err := body.U32()
		if err != nil {
			return c, err
		}
		if _, _, err := body.ReadValueType(); err != nil {
			return c, err
		}
		c.Locals += uint64(k)
	}
	c.ExprOffset = body.Offset()
	c.Expr = body.Rest()
	return c, nil
}

// Walker returns a Walker over the body's instructions.
func (c *Code) Walker() Walker { return NewWalker(c.Expr, c.ExprOffset) }
