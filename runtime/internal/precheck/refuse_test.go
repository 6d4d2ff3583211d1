package precheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// TestRefusals: the rules that are not numbers.
func TestRefusals(t *testing.T) {
	imp := func(kind byte, desc ...byte) []byte {
		return cat(name("env"), name("x"), []byte{kind}, desc)
	}
	for _, c := range []struct {
		rule, want string
		wasm       []byte
	}{
		{"NoStartSection", "module rejected: the start section (at offset 0x12) names function 0: a start function runs inside instantiation, where the host cannot put it under the call deadline (providers are WASI reactors, initialised by _initialize) (rule NoStartSection)",
			(&gen{types: [][]byte{funcType(nil, nil)}, funcs: []uint32{0}, start: leb(0), codes: [][]byte{body(nil, cat(opLoop, []byte{0x0c, 0x00}, opEnd, opEnd))}}).bytes()},
		{"FunctionImportsOnly", `module rejected: import 0 (at offset 0xb) imports table "x" from "env": the host provides functions only (rule FunctionImportsOnly)`,
			(&gen{imports: [][]byte{imp(0x01, 0x70, 0x00, 0x01)}}).bytes()},
		{"FunctionImportsOnly", `module rejected: import 0 (at offset 0xb) imports memory "x" from "env": the host provides functions only (rule FunctionImportsOnly)`,
			(&gen{imports: [][]byte{imp(0x02, 0x00, 0x01)}}).bytes()},
		{"FunctionImportsOnly", `module rejected: import 0 (at offset 0xb) imports global "x" from "env": the host provides functions only (rule FunctionImportsOnly)`,
			(&gen{imports: [][]byte{imp(0x03, 0x7f, 0x00)}}).bytes()},
		{"FunctionImportsOnly", `module rejected: import 0 (at offset 0x11) imports tag "x" from "env": the host provides functions only (rule FunctionImportsOnly)`,
			(&gen{types: [][]byte{funcType(nil, nil)}, imports: [][]byte{imp(0x04, 0x00, 0x00)}}).bytes()},
		{"SingleMemory", "module rejected: memory 1 (at offset 0xd) is a second memory (multi-memory): a provider has one (rule SingleMemory)",
			(&gen{mems: [][]byte{{0x00, 0x01}, {0x00, 0x01}}}).bytes()},
		{"NoSharedMemory", "module rejected: memory 0 (at offset 0xb) is shared (threads): a provider runs single-threaded, and a wait on a shared memory can block past the call deadline (rule NoSharedMemory)",
			(&gen{mems: [][]byte{{0x03, 0x01, 0x01}}}).bytes()},
		{"NoMemory64", "module rejected: memory 0 (at offset 0xb) has 64-bit indices (memory64), which the host does not support (rule NoMemory64)",
			(&gen{mems: [][]byte{{0x04, 0x01}}}).bytes()},
		{"NoTable64", "module rejected: table 0 (at offset 0xb) has 64-bit indices (memory64's table64), which the host does not support (rule NoTable64)",
			(&gen{tables: [][]byte{{0x70, 0x04, 0x01}}}).bytes()},
		// ref.func executed keeps a function reference per execution on
		// wazero (about 32 bytes: 321 MiB after 10 M), outside every
		// memory limit; in a constant expression it runs once.
		{"NoRefFuncInCode", "module rejected: function 0 (body at offset 0x2c) has ref.func at offset 0x30: on wazero every execution keeps a new function reference for the instance's life, outside the memory limit; reach functions through a table (call_indirect) instead (rule NoRefFuncInCode)",
			funcsModule(body(nil, cat(opLoop, []byte{0xd2, 0x00, 0x1a, 0x0c, 0x00}, opEnd, opI32Const(0), opEnd)))},
	} {
		_, err := Check(c.wasm, Limits{})
		var r *Rejection
		if !errors.As(err, &r) || !errors.Is(err, ErrRejected) || r.Limit != c.rule || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.rule, err, c.want)
		}
		// Measure refuses them too.
		if _, err := Measure(c.wasm); !errors.Is(err, ErrRejected) {
			t.Errorf("Measure %s: %v", c.rule, err)
		}
	}
}

// TestMalformed: what does not decode, or whose sections disagree, wraps
// ErrMalformed (not ErrRejected).
func TestMalformed(t *testing.T) {
	good := funcsModule(ret0())
	nameSec := func(sub ...[]byte) []byte { return section(0, cat(name("name"), cat(sub...))) }
	for _, c := range []struct {
		name, want string
		wasm       []byte
	}{
		{"empty", "no magic", nil},
		{"truncated", "overruns", good[:len(good)-1]},
		{"trailing byte in section", "bytes left at the end of the type section", module(section(1, cat(vec(i32i32), []byte{0x00})))},
		{"function type index", "function 0 has type index 1, but the module has 1 types", (&gen{types: [][]byte{i32i32}, funcs: []uint32{1}, codes: [][]byte{ret0()}}).bytes()},
		{"import type index", "import 0 has type index 0, but the module has 0 types", (&gen{imports: [][]byte{fnImport("f")}}).bytes()},
		{"bodies and functions", "the code section has 2 bodies for 1 functions", (&gen{types: [][]byte{i32i32}, funcs: []uint32{0}, codes: [][]byte{ret0(), ret0()}}).bytes()},
		{"no code section", "1 functions declared but no code section", (&gen{types: [][]byte{i32i32}, funcs: []uint32{0}}).bytes()},
		{"body overruns", "5 bytes expected, 2 left", funcsModule([]byte{0x05, 0x00, 0x0b})},
		{"unknown opcode", "unknown opcode 0xfb", funcsModule(ret0([]byte{0xfb, 0x00}))},
		{"GC type", "unsupported type form 0x4e", module(section(1, vec([]byte{0x4e, 0x01, 0x60, 0x00, 0x00})))},
		{"second name section", "a second name section", cat(good, nameSec(), nameSec())},
		{"name count overflow", "vector of", cat(good, nameSec(cat([]byte{1, 5}, leb(0xffffffff))))},
		{"name subsection not filled", "name subsection 1 has 1 bytes after its content", cat(good, nameSec(cat([]byte{1, 5}, vec(cat(leb(0), name("f"))), []byte{0x00})))},
		{"custom section name UTF-8", "UTF-8", cat(good, section(0, []byte{0x01, 0xff}))},
		{"huge custom section", "overruns", cat(good, []byte{0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00})},
		{"vector count past the bytes", "vector of 4294967295 items", module(section(1, leb(0xffffffff)))},
		{"element count past the bytes", "vector of", elemModule(cat([]byte{0x01, 0x00}, leb(0xffffffff)))},
	} {
		_, err := Check(c.wasm, Limits{})
		if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A well-formed name section passes.
	names := section(0, cat(name("name"), []byte{0}, leb(4), name("mod"), []byte{1}, leb(4), vec(cat(leb(0), name("f"))),
		[]byte{2}, leb(6), vec(cat(leb(0), vec(cat(leb(0), name("p"))))), []byte{7}, leb(1), []byte{0xaa}))
	if _, err := Check(cat(good, names), Limits{}); err != nil {
		t.Errorf("name section: %v", err)
	}
	if !errors.Is(ErrMalformed, wasmbin.ErrMalformed) {
		t.Errorf("ErrMalformed is not wasmbin's")
	}
}
