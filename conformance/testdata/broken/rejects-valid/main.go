// Command rejects-valid is a deliberately broken provider: the reference provider
// with the bug ref.Break("rejects-valid") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("rejects-valid") }

func main() {}
