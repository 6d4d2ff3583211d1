package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/runtime"
)

// FuzzInspectStatic: a static inspect is what one does to an untrusted
// module, so any bytes give a description or an error wrapping
// ErrInvalidModule: never a panic, never another error, never a claim that
// the code was validated. Seeded with the ABI fixtures (valid and invalid
// providers). Run:
//
//	go test -run '^$' -fuzz FuzzInspectStatic -fuzztime 60s ./runtime/
func FuzzInspectStatic(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "abi", "*.wasm"))
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	// No cache directory: each input is read, none written.
	rt := newRuntime(f, runtime.WithCompilationCacheDir(""))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		info, err := rt.Inspect(context.Background(), wasm, static)
		if err != nil {
			if !errors.Is(err, runtime.ErrInvalidModule) {
				t.Fatalf("an error not wrapping ErrInvalidModule: %v", err)
			}
			return
		}
		if info.Mode != runtime.InspectStatic || info.CodeValidated || info.Size != len(wasm) {
			t.Fatalf("static inspect: %+v", info)
		}
		if info.ABIVersionKnown != (info.ABIVersionFrom == runtime.FromConstant) || info.DeclaredKnown != (info.DeclaredFrom == runtime.FromConstant) {
			t.Fatalf("without a cache, a known value must come from a constant body: %+v", info)
		}
	})
}
