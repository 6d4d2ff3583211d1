// Package wasmbin decodes the WebAssembly binary format, as far as a host
// needs to look at an untrusted module before it hands it to a compiler:
// LEB128 numbers (leb128.go), a bounds-checked reader (reader.go), the
// section sequence (section.go), types and limits (types.go), the entries
// of the module's sections (entries.go), and every instruction with its
// immediates (opcode.go, instruction.go).
//
// It follows wazero's decoder in its names and its split into one file per
// concern, but it works on a byte slice, allocates nothing per item it
// decodes, and never panics: every malformed, truncated or unknown input is
// an *Error (errors.Is(err, ErrMalformed)) naming the byte offset in the
// module where decoding stopped.
//
// It decodes what wazero v1.12 or wasmtime v37 may accept: the 2.0 core
// (MVP, sign extension, non-trapping conversions, bulk memory and tables,
// reference types, multi-value, SIMD, relaxed SIMD), threads (atomics),
// tail calls, exception handling (try_table and the legacy try, catch,
// delegate and rethrow), typed function references, extended constant
// expressions, memory64 and multi-memory encodings. Anything else — GC
// types and instructions, stack switching, wide arithmetic, custom page
// sizes, an opcode no proposal above defines — is an error: the package
// fails closed rather than guess the length of an immediate it does not
// know.
//
// It decodes; it does not validate. A module it walks without error may
// still be invalid (a type mismatch, an index out of range, an else
// outside an if); the engine's validator finds those.
package wasmbin
