package wasmbin

import "fmt"

// SectionID identifies a section.
type SectionID = byte

// The section ids.
const (
	SectionIDCustom    SectionID = 0
	SectionIDType      SectionID = 1
	SectionIDImport    SectionID = 2
	SectionIDFunction  SectionID = 3
	SectionIDTable     SectionID = 4
	SectionIDMemory    SectionID = 5
	SectionIDGlobal    SectionID = 6
	SectionIDExport    SectionID = 7
	SectionIDStart     SectionID = 8
	SectionIDElement   SectionID = 9
	SectionIDCode      SectionID = 10
	SectionIDData      SectionID = 11
	SectionIDDataCount SectionID = 12 // bulk memory
	SectionIDTag       SectionID = 13 // exception handling
)

// Magic and Version are a module's first eight bytes.
const (
	Magic   = "\x00asm"
	Version = "\x01\x00\x00\x00"
	// HeaderSize is len(Magic) + len(Version).
	HeaderSize = 8
)

// SectionIDName returns the section's name in the spec ("type", "code",
// ...), or "unknown(N)".
func SectionIDName(id SectionID) string {
	switch id {
	case SectionIDCustom:
		return "custom"
	case SectionIDType:
		return "type"
	case SectionIDImport:
		return "import"
	case SectionIDFunction:
		return "function"
	case SectionIDTable:
		return "table"
	case SectionIDMemory:
		return "memory"
	case SectionIDGlobal:
		return "global"
	case SectionIDExport:
		return "export"
	case SectionIDStart:
		return "start"
	case SectionIDElement:
		return "element"
	case SectionIDCode:
		return "code"
	case SectionIDData:
		return "data"
	case SectionIDDataCount:
		return "data count"
	case SectionIDTag:
		return "tag"
	}
	return fmt.Sprintf("unknown(%d)", id)
}

// sectionRank is the position a non-custom section must keep in a
// module: the tag section goes between memory and global, the data count
// section between element and code. 0: not a known section.
func sectionRank(id SectionID) int {
	switch id {
	case SectionIDType:
		return 1
	case SectionIDImport:
		return 2
	case SectionIDFunction:
		return 3
	case SectionIDTable:
		return 4
	case SectionIDMemory:
		return 5
	case SectionIDTag:
		return 6
	case SectionIDGlobal:
		return 7
	case SectionIDExport:
		return 8
	case SectionIDStart:
		return 9
	case SectionIDElement:
		return 10
	case SectionIDDataCount:
		return 11
	case SectionIDCode:
		return 12
	case SectionIDData:
		return 13
	}
	return 0
}

// Section is one section of a module.
type Section struct {
	ID SectionID
	// Offset is the offset of the id byte; BodyOffset that of the body's
	// first byte.
	Offset, BodyOffset int
	// Body is the section's content (after its size), aliasing the
	// module.
	Body []byte
}

// End is the offset just past the section.
func (s *Section) End() int { return s.BodyOffset + len(s.Body) }

// Reader reads the section's body at its offsets in the module.
func (s *Section) Reader() Reader { return NewReader(s.Body, s.BodyOffset) }

// CustomName returns a custom section's name and a reader over the rest
// of its body.
func (s *Section) CustomName() ([]byte, Reader, error) {
	r := s.Reader()
	name, err := r.Name()
	return name, r, err
}

// Sections iterates over a module's sections, checking the header, that
// each section fits in the module, that the non-custom sections come in
// the spec's order, at most once each, and that their ids are known.
type Sections struct {
	r    Reader
	rank int
}

// NewSections checks wasm's header and returns an iterator over its
// sections.
func NewSections(wasm []byte) (Sections, error) {
	if len(wasm) < HeaderSize || string(wasm[:4]) != Magic {
		return Sections{}, Errorf(0, "not a WebAssembly binary (no magic number)")
	}
	if string(wasm[4:8]) != Version {
		return Sections{}, Errorf(4, "unsupported binary version %x (want 1)", wasm[4:8])
	}
	return Sections{r: Reader{buf: wasm, pos: HeaderSize}}, nil
}

// Next reads the next section into s and reports whether there was one.
func (it *Sections) Next(s *Section) (bool, error) {
	if it.r.Done() {
		return false, nil
	}
	off := it.r.Offset()
	id, _ := it.r.Byte()
	size, err := it.r.U32()
	if err != nil {
		return false, err
	}
	bodyOff := it.r.Offset()
	body, err := it.r.Bytes(uint64(size))
	if err != nil {
		return false, Errorf(off, "%s section of %d bytes overruns the module (%d bytes left)", SectionIDName(id), size, len(it.r.buf)-bodyOff)
	}
	if id != SectionIDCustom {
		rank := sectionRank(id)
		switch {
		case rank == 0:
			return false, Errorf(off, "unknown section id %d", id)
		case rank == it.rank:
			return false, Errorf(off, "duplicate %s section", SectionIDName(id))
		case rank < it.rank:
			return false, Errorf(off, "%s section out of order", SectionIDName(id))
		}
		it.rank = rank
	}
	*s = Section{ID: id, Offset: off, BodyOffset: bodyOff, Body: body}
	return true, nil
}
