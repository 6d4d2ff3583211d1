// Package architecture holds no code: its test checks the import rules
// docs/ARCHITECTURE.md states, with the go command's own view of the
// dependency graph.
package architecture
