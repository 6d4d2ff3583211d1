// Package attackguests holds hostile Go guests for the runtime's
// malicious-guest suite (runtime/sandbox_test.go). Each subdirectory is a
// guest main package built with GOOS=wasip1 GOARCH=wasm by
// internal/testing/testguest; attacks that need no Go runtime are WAT fixtures in
// runtime/testdata/malicious instead.
package attackguests
