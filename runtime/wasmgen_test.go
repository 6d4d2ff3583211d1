package runtime_test

// A small WebAssembly encoder for hostile modules too big or too
// repetitive to commit as fixtures (200,000 unrolled instructions, compile
// bombs): each is a valid ABI v1 provider whose method bodies the test
// chooses.

import (
	"bytes"
	"encoding/binary"
	"sort"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Opcodes the generated bodies use.
const (
	opUnreachable = 0x00
	opBlock       = 0x02
	opLoop        = 0x03
	opIf          = 0x04
	opEnd         = 0x0b
	opBr          = 0x0c
	opBrIf        = 0x0d
	opBrTable     = 0x0e
	opCall        = 0x10
	opDrop        = 0x1a
	opLocalGet    = 0x20
	opLocalSet    = 0x21
	opGlobalGet   = 0x23
	opGlobalSet   = 0x24
	opI32Const    = 0x41
	opI64Const    = 0x42
	opI64Mul      = 0x7e
	opBlockEmpty  = 0x40
	valI32        = 0x7f
	valI64        = 0x7e
)

func uleb(v uint64) []byte { return wasmbin.AppendUint64(nil, v) }

func sleb(v int64) []byte { return wasmbin.AppendInt64(nil, v) }

func wasmName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items ...[]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// genFunc is a defined function: its type, locals (count, type pairs)
// and body (instructions without the final end).
type genFunc struct {
	export          string
	params, results []byte
	locals          [][2]uint64
	body            []byte
}

// genImport is a function import.
type genImport struct {
	module, name    string
	params, results []byte
}

// genModule is a module for the encoder.
type genModule struct {
	imports []genImport
	funcs   []genFunc
	pages   uint32 // memory pages; the memory is exported as "memory"
	// raw sections appended in id order with the generated ones (id, body).
	extra map[byte][]byte
}

func (m *genModule) bytes() []byte {
	type sig struct{ params, results string }
	var types []sig
	typeIndex := func(p, r []byte) uint64 {
		s := sig{string(p), string(r)}
		for i, t := range types {
			if t == s {
				return uint64(i)
			}
		}
		types = append(types, s)
		return uint64(len(types) - 1)
	}
	var imports, funcs, exports, code [][]byte
	for _, im := range m.imports {
		e := append(wasmName(im.module), wasmName(im.name)...)
		imports = append(imports, append(append(e, 0x00), uleb(typeIndex(im.params, im.results))...))
	}
	for i, f := range m.funcs {
		funcs = append(funcs, uleb(typeIndex(f.params, f.results)))
		if f.export != "" {
			idx := uint64(len(m.imports) + i)
			exports = append(exports, append(append(wasmName(f.export), 0x00), uleb(idx)...))
		}
		var locals [][]byte
		for _, l := range f.locals {
			locals = append(locals, append(uleb(l[0]), byte(l[1])))
		}
		body := append(vec(locals...), f.body...)
		body = append(body, opEnd)
		code = append(code, append(uleb(uint64(len(body))), body...))
	}
	exports = append(exports, append(append(wasmName(abi.ExportMemory), 0x02), 0x00))
	var typeSec [][]byte
	for _, t := range types {
		typeSec = append(typeSec, append(append([]byte{0x60}, vec(splitBytes(t.params)...)...), vec(splitBytes(t.results)...)...))
	}
	secs := map[byte][]byte{
		1:  vec(typeSec...),
		3:  vec(funcs...),
		5:  vec(append([]byte{0x00}, uleb(uint64(m.pages))...)),
		7:  vec(exports...),
		10: vec(code...),
	}
	if len(imports) > 0 {
		secs[2] = vec(imports...)
	}
	for id, b := range m.extra {
		secs[id] = b
	}
	ids := make([]int, 0, len(secs))
	for id := range secs {
		ids = append(ids, int(id))
	}
	// Section order: the ids are ordered as numbers for those used here,
	// except data count (12), which goes before code (10).
	order := func(id int) int {
		if id == 12 {
			return 95
		}
		return id * 10
	}
	sort.Slice(ids, func(a, b int) bool { return order(ids[a]) < order(ids[b]) })
	var out bytes.Buffer
	out.Write([]byte("\x00asm\x01\x00\x00\x00"))
	for _, id := range ids {
		out.WriteByte(byte(id))
		out.Write(uleb(uint64(len(secs[byte(id)]))))
		out.Write(secs[byte(id)])
	}
	return out.Bytes()
}

func splitBytes(s string) [][]byte {
	out := make([][]byte, len(s))
	for i := range s {
		out[i] = []byte{s[i]}
	}
	return out
}

// providerModule is an ABI v1 provider declaring caps whose methods
// return 0, except those in bodies (export name → body returning an i32).
func providerModule(caps uint64, bodies map[string][]byte, imports ...genImport) *genModule {
	m := &genModule{imports: imports, pages: 1}
	i32 := []byte{valI32}
	m.funcs = append(m.funcs,
		genFunc{export: abi.ExportABIVersion, results: i32, body: []byte{opI32Const, 1}},
		genFunc{export: abi.ExportCapabilities, results: []byte{valI64}, body: append([]byte{opI64Const}, sleb(int64(caps))...)},
	)
	for _, meth := range abi.Methods {
		body, ok := bodies[meth.Export()]
		if !ok {
			body = []byte{opI32Const, 0}
		}
		m.funcs = append(m.funcs, genFunc{export: meth.Export(), results: i32, body: body})
	}
	for _, meth := range abi.OptionalMethods {
		if body, ok := bodies[meth.Export()]; ok {
			m.funcs = append(m.funcs, genFunc{export: meth.Export(), results: i32, body: body})
		}
	}
	return m
}

// loopForever is a body that runs body over and over: loop body br 0 end,
// then an unreachable i32 result.
func loopForever(body []byte) []byte {
	out := []byte{opLoop, opBlockEmpty}
	out = append(out, body...)
	out = append(out, opBr, 0, opEnd, opI32Const, 0)
	return out
}

// unrolledMuls is n straight-line i64.mul instructions on global 0, each
// multiplying by the global again, so that no optimiser can fold or drop
// them: 2n instructions and no check the host could stop at. The module
// needs mutableI64Global.
func unrolledMuls(n int) []byte {
	out := []byte{opGlobalGet, 0}
	for i := 0; i < n; i++ {
		out = append(out, opGlobalGet, 0, opI64Mul)
	}
	return append(out, opGlobalSet, 0)
}

// mutableI64Global is a global section of one (mut i64) initialised to 3.
func mutableI64Global() []byte { return vec([]byte{valI64, 0x01, opI64Const, 3, opEnd}) }

// dataSection is one active data segment of memory 0 at offset.
func dataSection(offset int32, b []byte) []byte {
	seg := append([]byte{0x00, opI32Const}, sleb(int64(offset))...)
	seg = append(seg, opEnd)
	seg = append(seg, uleb(uint64(len(b)))...)
	return vec(append(seg, b...))
}

// le32 is v little-endian, for data segments.
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// ---- Bulk memory guests (issue 25 item 6) ----
//
// Guests whose loop bodies are single memory.fill, memory.copy or
// memory.init instructions of many MiB, and one that grows its memory to
// 256 MiB and fills it once (every page touched for the first time): the
// instrumentation splits such instructions into chunks with a check
// between two (runtime/internal/interrupt, bulk.go).

// bulkGuest is a provider with a memory of pages pages whose Validate runs
// pre once, then body forever.
func bulkGuest(pages uint32, pre, body []byte) *genModule {
	validate := append(append([]byte{}, pre...), loopForever(body)...)
	m := providerModule(0, map[string][]byte{abi.MethodValidate.Export(): validate})
	m.pages = pages
	return m
}

// bulkConst is i32.const v.
func bulkConst(v int64) []byte { return append([]byte{opI32Const}, sleb(v)...) }

// Bulk memory instructions on memory 0 (their operands before them).
var (
	bulkFill = []byte{wasmbin.OpcodePrefixMisc, byte(wasmbin.MiscMemoryFill), 0}
	bulkCopy = []byte{wasmbin.OpcodePrefixMisc, byte(wasmbin.MiscMemoryCopy), 0, 0}
	bulkInit = []byte{wasmbin.OpcodePrefixMisc, byte(wasmbin.MiscMemoryInit), 0, 0} // data segment 0
)

// memoryFillLoop fills the whole memory of mib MiB, forever.
func memoryFillLoop(mib int64) []byte {
	body := append(append(append(bulkConst(0), bulkConst(0x5a)...), bulkConst(mib<<20)...), bulkFill...)
	return bulkGuest(uint32(mib*16), nil, body).bytes()
}

// memoryCopyLoop copies the first mib MiB of a memory of 2·mib MiB to its
// second half, forever.
func memoryCopyLoop(mib int64) []byte {
	body := append(append(append(bulkConst(mib<<20), bulkConst(0)...), bulkConst(mib<<20)...), bulkCopy...)
	return bulkGuest(uint32(2*mib*16), nil, body).bytes()
}

// growThenFill grows a one-page memory to mib MiB, fills it once (the
// first touch of every page), then spins.
func growThenFill(mib int64) []byte {
	pre := append(bulkConst(mib*16-1), wasmbin.OpcodeMemoryGrow, 0, opDrop)
	pre = append(append(append(append(pre, bulkConst(0)...), bulkConst(1)...), bulkConst(mib<<20)...), bulkFill...)
	return bulkGuest(1, pre, nil).bytes()
}

// memoryInitLoop copies a passive data segment of n bytes into memory,
// forever (a module's data may total 32 MiB: precheck.DefaultLimits).
func memoryInitLoop(n int64) []byte {
	body := append(append(append(bulkConst(0), bulkConst(0)...), bulkConst(n)...), bulkInit...)
	m := bulkGuest(uint32((n+65535)>>16), nil, body)
	seg := append([]byte{0x01}, uleb(uint64(n))...) // passive
	seg = append(seg, bytes.Repeat([]byte{0xa5}, int(n))...)
	m.extra = map[byte][]byte{12: uleb(1), 11: vec(seg)}
	return m.bytes()
}
