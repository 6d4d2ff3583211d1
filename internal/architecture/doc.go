// Package architecture holds no code: its tests keep docs/ARCHITECTURE.md
// true with the go command's own view of the module — the import rules
// it states (go list -deps), its package tables naming every package and
// nothing else (go list ./...) — and check that hack/fuzz-targets.sh
// finds every fuzz function and that the modules CI builds beside the main
// one share its dependency versions (one build, not two).
package architecture
