package wasip1_test

import "github.com/wasmprov/wasmprov/runtime/internal/wasip1"

// probe is the differential guest: it imports every WASI function and
// exports each as "w_<name>" with the same signature, plus helpers to set
// up and inspect its memory. Its signatures come from the table under
// test, and the reference (wazero's own WASI) refuses to link any that is
// wrong.
func probe() []byte {
	m := module{minPages: 2, maxPages: 16, exportMemory: true}
	fns := wasip1.Functions()
	for _, f := range fns {
		m.imports = append(m.imports, imp{wasip1.ModuleName, f.Name, sig{f.Params, f.Results}})
	}
	for k, f := range fns {
		var body []byte
		for p := range f.Params {
			body = append(body, localGet(p)...)
		}
		body = append(body, call(k)...)
		m.funcs = append(m.funcs, fun{export: "w_" + f.Name, sig: sig{f.Params, f.Results}, body: body})
	}
	m.funcs = append(m.funcs,
		fun{export: "store8", sig: sig{[]byte{tI32, tI32}, nil}, body: cat(localGet(0), localGet(1), []byte{0x3a, 0x00, 0x00})},
		fun{export: "store32", sig: sig{[]byte{tI32, tI32}, nil}, body: cat(localGet(0), localGet(1), []byte{0x36, 0x02, 0x00})},
		fun{export: "store64", sig: sig{[]byte{tI32, tI64}, nil}, body: cat(localGet(0), localGet(1), []byte{0x37, 0x03, 0x00})},
		fun{export: "load64", sig: sig{[]byte{tI32}, []byte{tI64}}, body: cat(localGet(0), []byte{0x29, 0x03, 0x00})},
		fun{export: "pages", sig: sig{nil, []byte{tI32}}, body: []byte{0x3f, 0x00}},
		fun{export: "grow", sig: sig{[]byte{tI32}, []byte{tI32}}, body: cat(localGet(0), []byte{0x40, 0x00})},
		// hash(ptr, len): FNV-1a over the 64-bit words of [ptr, ptr+len).
		fun{export: "hash", sig: sig{[]byte{tI32, tI32}, []byte{tI64}}, locals: []byte{tI64}, body: cat(
			i64Const(-3750763034362895579), localSet(2), // 0xcbf29ce484222325
			[]byte{0x02, 0x40, 0x03, 0x40},        // block loop
			localGet(1), []byte{0x45, 0x0d, 0x01}, // len == 0: br_if 1
			localGet(2), localGet(0), []byte{0x29, 0x03, 0x00}, []byte{0x85}, // h ^ load64(ptr)
			i64Const(1099511628211), []byte{0x7e}, localSet(2), // * prime
			localGet(0), i32Const(8), []byte{0x6a}, localSet(0),
			localGet(1), i32Const(8), []byte{0x6b}, localSet(1),
			[]byte{0x0c, 0x00, 0x0b, 0x0b}, // br 0; end; end
			localGet(2),
		)},
	)
	return m.encode()
}
