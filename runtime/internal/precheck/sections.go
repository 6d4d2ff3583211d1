package precheck

import (
	"fmt"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// The sections before and after the code section (code.go), one reader
// each, which checker.section calls: their item counts and what each
// item may hold.

func (c *checker) types(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	if err := c.count("MaxTypes", uint64(n), c.l.MaxTypes, s, "types"); err != nil {
		return err
	}
	c.st.Types = int(n)
	c.typeParams = make([]uint32, n)
	c.typeResults = make([]uint32, n)
	for i := range c.typeParams {
		off := r.Offset()
		ft, err := r.ReadFuncType()
		if err != nil {
			return err
		}
		where := func() string { return at(fmt.Sprintf("type %d", i), off) }
		if int64(ft.Params) > int64(c.l.MaxTypeParams) {
			return exceed("MaxTypeParams", uint64(ft.Params), c.l.MaxTypeParams, off, where(), fmt.Sprintf("has %d parameters", ft.Params))
		}
		if int64(ft.Results) > int64(c.l.MaxTypeResults) {
			return exceed("MaxTypeResults", uint64(ft.Results), c.l.MaxTypeResults, off, where(), fmt.Sprintf("has %d results", ft.Results))
		}
		c.st.MaxTypeParams = max(c.st.MaxTypeParams, int(ft.Params))
		c.st.MaxTypeResults = max(c.st.MaxTypeResults, int(ft.Results))
		c.typeParams[i] = ft.Params
		c.typeResults[i] = ft.Results
	}
	return nil
}

// typeIndex checks a type index of item i of a kind ("function",
// "import", "tag").
func (c *checker) typeIndex(idx uint32, offset int, kind string, i uint32) error {
	if uint64(idx) >= uint64(len(c.typeParams)) {
		return malformed(offset, "%s %d has type index %d, but the module has %d types", kind, i, idx, len(c.typeParams))
	}
	return nil
}

func (c *checker) imports(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(4)
	if err != nil {
		return err
	}
	if err := c.count("MaxImports", uint64(n), c.l.MaxImports, s, "imports"); err != nil {
		return err
	}
	c.st.Imports = int(n)
	for i := uint32(0); i < n; i++ {
		im, err := r.ReadImport()
		if err != nil {
			return err
		}
		if im.Kind != wasmbin.ExternFunc {
			return refuse("FunctionImportsOnly", im.Offset, at(fmt.Sprintf("import %d", i), im.Offset),
				fmt.Sprintf("imports %s %q from %q: the host provides functions only", wasmbin.ExternKindName(im.Kind), im.Name, im.Module))
		}
		if err := c.typeIndex(im.Index, im.Offset, "import", i); err != nil {
			return err
		}
		c.importFns++
	}
	return nil
}

func (c *checker) functions(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(1)
	if err != nil {
		return err
	}
	if err := c.count("MaxFunctions", uint64(n), c.l.MaxFunctions, s, "functions"); err != nil {
		return err
	}
	c.st.Functions = int(n)
	c.nFuncs = n
	c.funcs = *r // read again in step with the code section
	for i := uint32(0); i < n; i++ {
		off := r.Offset()
		t, err := r.U32()
		if err != nil {
			return err
		}
		if err := c.typeIndex(t, off, "function", c.importFns+i); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) tables(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	if err := c.count("MaxTables", uint64(n), c.l.MaxTables, s, "tables"); err != nil {
		return err
	}
	c.st.Tables = int(n)
	c.tableSec = *s
	for i := uint32(0); i < n; i++ {
		t, err := r.ReadTable()
		if err != nil {
			return err
		}
		lim := t.Type.Limits
		where := at(fmt.Sprintf("table %d", i), t.Offset)
		if lim.Is64() {
			return refuse("NoTable64", t.Offset, where, "has 64-bit indices (memory64's table64), which the host does not support")
		}
		if lim.Min > uint64(c.l.MaxTableEntries) {
			return exceed("MaxTableEntries", lim.Min, c.l.MaxTableEntries, t.Offset, where,
				fmt.Sprintf("has an initial size of %d entries", lim.Min))
		}
		c.st.MaxTableMin = max(c.st.MaxTableMin, int(lim.Min))
		c.st.TableEntries += int(lim.Min) // each within MaxTableEntries, at most MaxTables of them
		if c.st.TableEntries > c.l.MaxInitialTableEntries {
			return exceed("MaxInitialTableEntries", uint64(c.st.TableEntries), c.l.MaxInitialTableEntries, t.Offset, where,
				fmt.Sprintf("brings the tables' initial sizes to %d entries", c.st.TableEntries))
		}
		if !lim.HasMax() || lim.Max > uint64(c.l.MaxTableEntries) {
			c.rewrites = append(c.rewrites, lim)
			c.st.TablesRewritten++
		}
	}
	return nil
}

func (c *checker) memoriesSection(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		off := r.Offset()
		lim, err := r.ReadLimits()
		if err != nil {
			return err
		}
		where := at(fmt.Sprintf("memory %d", i), off)
		switch {
		case i > 0:
			return refuse("SingleMemory", off, where, "is a second memory (multi-memory): a provider has one")
		case lim.Shared():
			return refuse("NoSharedMemory", off, where, "is shared (threads): a provider runs single-threaded, and a wait on a shared memory can block past the call deadline")
		case lim.Is64():
			return refuse("NoMemory64", off, where, "has 64-bit indices (memory64), which the host does not support")
		}
		c.memories++
	}
	return nil
}

func (c *checker) tags(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	if err := c.count("MaxTags", uint64(n), c.l.MaxTags, s, "tags"); err != nil {
		return err
	}
	c.st.Tags = int(n)
	for i := uint32(0); i < n; i++ {
		off := r.Offset()
		t, err := r.ReadTagType()
		if err != nil {
			return err
		}
		if err := c.typeIndex(t, off, "tag", i); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) globals(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	if err := c.count("MaxGlobals", uint64(n), c.l.MaxGlobals, s, "globals"); err != nil {
		return err
	}
	c.st.Globals = int(n)
	for i := uint32(0); i < n; i++ {
		if _, err := r.ReadGlobalType(); err != nil {
			return err
		}
		if _, _, err := r.ReadConstExpr(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) exports(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	if err := c.count("MaxExports", uint64(n), c.l.MaxExports, s, "exports"); err != nil {
		return err
	}
	c.st.Exports = int(n)
	for i := uint32(0); i < n; i++ {
		if _, err := r.ReadExport(); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) elements(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	if err := c.count("MaxElementSegments", uint64(n), c.l.MaxElementSegments, s, "element segments"); err != nil {
		return err
	}
	c.st.ElementSegments = int(n)
	var total uint64
	for i := uint32(0); i < n; i++ {
		seg, err := r.ReadElementSegment()
		if err != nil {
			return err
		}
		total += uint64(seg.Count)
		if total > uint64(c.l.MaxElements) {
			return exceed("MaxElements", total, c.l.MaxElements, seg.Offset, at(fmt.Sprintf("element segment %d", i), seg.Offset),
				fmt.Sprintf("brings the elements to %d", total))
		}
	}
	c.st.Elements = int(total)
	return nil
}

func (c *checker) data(s *wasmbin.Section, r *wasmbin.Reader) error {
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	if err := c.count("MaxDataSegments", uint64(n), c.l.MaxDataSegments, s, "data segments"); err != nil {
		return err
	}
	c.st.DataSegments = int(n)
	var total uint64
	for i := uint32(0); i < n; i++ {
		seg, err := r.ReadDataSegment()
		if err != nil {
			return err
		}
		total += uint64(len(seg.Init))
		if total > uint64(c.l.MaxDataBytes) {
			return exceed("MaxDataBytes", total, c.l.MaxDataBytes, seg.Offset, at(fmt.Sprintf("data segment %d", i), seg.Offset),
				fmt.Sprintf("brings the data to %d bytes", total))
		}
	}
	c.st.DataBytes = int(total)
	return nil
}
