//go:build wasmtime

// Package compiler is the compiler process of the wasmtime engine, and what
// the engine and it must agree on: the wasmtime configuration (Config), the
// environment that starts it, how the module goes in and the result comes
// out.
//
// The compiler process is the engine's own binary started again: on Linux,
// this package's init sees Env and Arg0, compiles the module it reads on
// stdin, writes the serialized module to file descriptor ResultFD and exits
// before main runs. It is a package of its own, depending on nothing but
// wasmtime-go and the standard library, so that as few packages as
// possible run their init in the compiler process before it: Go initialises
// the packages in import-path order as their dependencies allow, and this
// one is ready right after wasmtime-go, before the packages that sort after
// "github.com/wasmprov" (k8s.io, google.golang.org, golang.org/x, ...).
// Those sorting before it (the standard library, most github.com/...
// modules) still run theirs in the compiler process too.
package compiler

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

// Config is everything the compiled code depends on. The engine passes it
// to the compiler process in its environment (Encode, Decode), and both
// build their wasmtime engine with the same WasmtimeConfig, so they cannot
// drift (were they to, deserializing the compiled module would fail:
// wasmtime checks the settings a serialized module was compiled with).
type Config struct {
	OptLevel wasmtime.OptLevel
	// MemoryLimit bounds the compiler process's data (RLIMIT_DATA), in
	// bytes; 0 leaves it unbounded.
	MemoryLimit int64
}

// WasmtimeConfig is the wasmtime configuration of the engine and of the
// compiler process's engine.
func (c Config) WasmtimeConfig() *wasmtime.Config {
	cfg := wasmtime.NewConfig()
	setFeatures(cfg)
	cfg.SetCraneliftOptLevel(c.OptLevel)
	return cfg
}

// setFeatures enables the WebAssembly proposals wazero v1.12.0 enables by
// default (api.CoreFeaturesV2: mutable globals, bulk memory, multi-value,
// non-trapping float-to-int conversions, reference types, sign extension,
// SIMD), so both engines accept the same modules, plus multi-memory, which
// the interrupt flag's memory needs. Everything wasmtime-go can switch off
// is off — threads above all: a shared memory's memory.atomic.wait32 blocks
// in the engine, where no interrupt reaches it. (Non-trapping conversions,
// sign extension and mutable globals cannot be switched off in wasmtime;
// neither can extended constant expressions, which wasmtime accepts and
// wazero does not.)
func setFeatures(cfg *wasmtime.Config) {
	cfg.SetWasmBulkMemory(true)
	cfg.SetWasmMultiValue(true)
	cfg.SetWasmReferenceTypes(true)
	cfg.SetWasmSIMD(true)
	cfg.SetWasmMultiMemory(true) // the interrupt flag's memory

	cfg.SetWasmThreads(false)
	cfg.SetWasmRelaxedSIMD(false)
	cfg.SetWasmMemory64(false)
	cfg.SetWasmTailCall(false)
	cfg.SetWasmFunctionReferences(false)
	cfg.SetWasmGC(false)
	cfg.SetWasmWideArithmetic(false)
}

// The compiler process is started with Env set to Config.Encode() and Arg0
// as its argv[0] (both, so that a variable left in a shell's environment
// does not turn every program into a compiler).
const (
	Env  = "WASMPROV_WASMTIME_COMPILER"
	Arg0 = "wasmprov-wasmtime-compiler"
)

// ResultFD is the compiler's file descriptor of its result (the first of
// exec.Cmd.ExtraFiles), so that whatever the packages initialised before
// this one print on stdout cannot corrupt it. It carries one frame
// (WriteFrame): the serialized module, or the message of a failure.
const ResultFD = 3

// The compiler process's exit codes. A Go fatal error exits with 2; an
// abort (Rust's allocation failure) is SIGABRT.
const (
	ExitInvalid    = 3 // wasmtime refused the module; the frame is its message
	ExitUsage      = 4 // a protocol error; the frame is the message
	ExitParentGone = 5 // stdin ended: the engine's process closed it, or died
)

// MaxInput bounds the module a compiler process reads.
const MaxInput = 1 << 30

// protocol versions the environment value and the framing; a compiler
// process of another build refuses a value it does not know.
const protocol = "v1"

// Encode is the value of Env for c.
func (c Config) Encode() string {
	return fmt.Sprintf("%s opt=%d mem=%d", protocol, c.OptLevel, c.MemoryLimit)
}

// Decode parses what Encode returned.
func Decode(s string) (Config, error) {
	var c Config
	fields := strings.Fields(s)
	if len(fields) == 0 || fields[0] != protocol {
		return c, fmt.Errorf("compiler protocol %q, want %s", s, protocol)
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || seen[k] {
			return c, fmt.Errorf("compiler setting %q", f)
		}
		switch k {
		case "opt":
			c.OptLevel = wasmtime.OptLevel(n)
		case "mem":
			c.MemoryLimit = n
		default:
			return c, fmt.Errorf("unknown compiler setting %q", f)
		}
		seen[k] = true
	}
	if !seen["opt"] || !seen["mem"] {
		return c, fmt.Errorf("compiler settings %q incomplete", s)
	}
	return c, nil
}

// magic starts the compiler's stdin, followed by the module's frame.
const magic = "wpcomp01"

// WriteRequest writes the module to the compiler's stdin. The engine keeps
// stdin open afterwards: the compiler exits when it ends.
func WriteRequest(w io.Writer, wasm []byte) error {
	if _, err := io.WriteString(w, magic); err != nil {
		return err
	}
	return WriteFrame(w, wasm)
}

// ReadRequest reads what WriteRequest wrote.
func ReadRequest(r io.Reader) ([]byte, error) {
	var m [len(magic)]byte
	if _, err := io.ReadFull(r, m[:]); err != nil || string(m[:]) != magic {
		return nil, fmt.Errorf("reading the module: bad header (%v)", err)
	}
	wasm, err := ReadFrame(r, MaxInput)
	if err != nil {
		return nil, fmt.Errorf("reading the module: %w", err)
	}
	return wasm, nil
}

// WriteFrame writes b after its length (uint64, little endian), so the
// reader allocates it at once.
func WriteFrame(w io.Writer, b []byte) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// ReadFrame reads what WriteFrame wrote, refusing more than limit bytes.
func ReadFrame(r io.Reader, limit int64) ([]byte, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > uint64(limit) {
		return nil, fmt.Errorf("a frame of %d bytes, over the limit of %d", size, limit)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
