package precheck

import (
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Name section subsection ids wazero decodes.
const (
	nameModule    = 0
	nameFunctions = 1
	nameLocals    = 2
)

// custom checks a custom section's name and, for the "name" section,
// its module, function and local names: wazero decodes those,
// allocating for each count it reads before it reads the items, and
// reading a subsection by its content, not its size. So each count must
// fit the subsection's bytes, and the content must fill the subsection
// exactly. There may be one "name" section (wazero refuses a second).
func (c *checker) custom(s *wasmbin.Section) error {
	name, r, err := s.CustomName()
	if err != nil {
		return err
	}
	if string(name) != "name" {
		return nil
	}
	if c.haveNames {
		return malformed(s.Offset, "a second name section")
	}
	c.haveNames = true
	for !r.Done() {
		off := r.Offset()
		id, _ := r.Byte()
		size, err := r.U32()
		if err != nil {
			return err
		}
		sub, err := r.Sub(uint64(size))
		if err != nil {
			return err
		}
		switch id {
		case nameModule:
			_, err = sub.Name()
		case nameFunctions:
			err = nameMap(&sub)
		case nameLocals:
			var n uint32
			if n, err = sub.VecCount(2); err != nil {
				return err
			}
			for ; n > 0 && err == nil; n-- {
				if _, err = sub.U32(); err == nil {
					err = nameMap(&sub)
				}
			}
		default:
			continue // skipped by its size
		}
		if err != nil {
			return err
		}
		if !sub.Done() {
			return malformed(off, "name subsection %d has %d bytes after its content", id, sub.Len())
		}
	}
	return nil
}

func nameMap(r *wasmbin.Reader) error {
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if _, err := r.U32(); err != nil {
			return err
		}
		if _, err := r.Name(); err != nil {
			return err
		}
	}
	return nil
}
