package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
)

// TestVersion: `wasmprov version` and `wasmprov --version` print the
// host version, the ABI version and every engine compiled in (wasmtime
// only in a build with -tags wasmtime), wazero marked the default.
func TestVersion(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	if code, again, _ := runCLI(t, "--version"); code != 0 || again != out {
		t.Errorf("--version: exit %d, %q; want %q", code, again, out)
	}
	for _, want := range []string{"wasmprov " + runtime.Version + "\n", fmt.Sprintf("abi:     %d (import module %s)\n", abi.Version, abi.ModuleName), "wazero (default)"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	engines := runtime.Engines()
	line := out[strings.Index(out, "engines:"):]
	line = line[:strings.Index(line, "\n")]
	if got := len(strings.Split(line, ",")); got != len(engines) {
		t.Errorf("engines line %q names %d engines, the binary has %v", line, got, engines)
	}
	wasmtime := false
	for _, e := range engines {
		wasmtime = wasmtime || e == runtime.EngineWasmtime
	}
	if strings.Contains(line, "wasmtime") != wasmtime {
		t.Errorf("engines line %q; wasmtime compiled in: %t", line, wasmtime)
	}
	if code, _, errOut := runCLI(t, "version", "extra"); code == 0 || !strings.Contains(errOut, "usage") {
		t.Errorf("version with an argument: exit %d, %q", code, errOut)
	}
}
