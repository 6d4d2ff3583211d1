package runtime_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// customSection encodes a custom section whose sizes fit in one LEB128
// byte each (the tests keep payloads under 128 bytes).
func customSection(name, payload string) []byte {
	body := append([]byte{byte(len(name))}, name...)
	body = append(body, payload...)
	return append([]byte{0, byte(len(body))}, body...)
}

// TestLoadRefusesByMetadata: a module whose metadata is not JSON, names
// another ABI or a newer host is refused with the reason, and before it is
// compiled: the module's code section is garbage, so any compile would
// fail with another error.
func TestLoadRefusesByMetadata(t *testing.T) {
	rt := testhost.NewRuntime(t)
	ctx := context.Background()
	// A type section, a function section of one function, and a code
	// section whose body does not decode.
	broken := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x0a\x04\x01\x02\xff\xff")
	for name, tc := range map[string]struct{ payload, want string }{
		"not JSON":   {`name=fake`, "not a JSON object"},
		"newer host": {`{"name":"fake","minHostVersion":"999.0.0"}`, "needs host version 999.0.0 or newer, this host is " + runtime.Version},
		"other ABI":  {`{"name":"fake","abiVersion":7}`, "built for ABI version 7, the host implements 1"},
	} {
		wasm := append(append([]byte{}, broken...), customSection(metadata.SectionName, tc.payload)...)
		_, err := rt.LoadBytes(ctx, "fake", wasm)
		if !errors.Is(err, runtime.ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadBytes = %v; want ErrInvalidModule naming %q", name, err, tc.want)
		}
		info, err := rt.Inspect(ctx, append(append([]byte{}, minimalValid(t)...), customSection(metadata.SectionName, tc.payload)...))
		if err != nil {
			t.Fatalf("%s: Inspect: %v", name, err)
		}
		if !strings.Contains(strings.Join(info.Problems, "\n"), tc.want) {
			t.Errorf("%s: Inspect problems %q lack %q", name, info.Problems, tc.want)
		}
	}
	// Without metadata, the broken module fails in compiling: the cases
	// above did not.
	if _, err := rt.LoadBytes(ctx, "fake", broken); err == nil || strings.Contains(err.Error(), "metadata") {
		t.Fatalf("the broken module without metadata: %v", err)
	}
}

// minimalValid is a module that compiles (one type, no functions).
func minimalValid(*testing.T) []byte {
	return []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00")
}

// TestLoadAnnotated: a real provider with compatible metadata loads (its
// probe instance ran); Inspect returns the metadata.
func TestLoadAnnotated(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err = metadata.Write(wasm, &metadata.Metadata{Name: "fake", Version: "1.0.0", ABIVersion: abi.Version, MinHostVersion: runtime.Version})
	if err != nil {
		t.Fatal(err)
	}
	rt := testhost.NewRuntime(t)
	p, err := rt.LoadBytes(context.Background(), "fake", wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	info, err := rt.Inspect(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata == nil || info.Metadata.Version != "1.0.0" || len(info.Problems) != 0 {
		t.Fatalf("Inspect: metadata %+v, problems %q", info.Metadata, info.Problems)
	}
}
