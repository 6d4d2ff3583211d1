package precheck

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
)

// wazeroCompiles reports whether wazero compiles wasm (a panic in its
// decoder counts as no).
func wazeroCompiles(wasm []byte) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	m, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return false, err
	}
	m.Close(ctx)
	return true, nil
}

// FuzzCheck: no input makes Check (or Measure) panic, and when wazero
// compiles a module and Check accepts it, wazero compiles what Check
// returns too.
func FuzzCheck(f *testing.F) {
	f.Add(funcsModule(ret0()))
	f.Add(growModule())
	f.Add(funcsModule(ret0(opBlock, opLocalGet(0), []byte{0x0e, 0x02, 0x00, 0x01, 0x00}, opEnd)))
	f.Add(elemModule(cat([]byte{0x00, 0x41, 0x00, 0x0b}, vec(leb(0)))))
	f.Add((&gen{tables: [][]byte{{0x70, 0x00, 0x01}, {0x6f, 0x01, 0x00, 0x02}}, mems: [][]byte{{0x00, 0x01}},
		datas: [][]byte{{0x00, 0x41, 0x00, 0x0b, 0x01, 0xaa}}}).bytes())
	for _, dir := range []string{"../../testdata/abi", "../../testdata/malicious", "../../testdata/malformed"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Check(wasm, Limits{})
		_, _ = Measure(wasm)
		if err != nil {
			return
		}
		if ok, _ := wazeroCompiles(wasm); !ok {
			return
		}
		if ok, err := wazeroCompiles(out); !ok {
			t.Fatalf("wazero compiles the input but not Check's output: %v", err)
		}
	})
}
