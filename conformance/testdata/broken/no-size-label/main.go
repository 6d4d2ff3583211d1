// Command no-size-label is a deliberately broken provider: the reference provider
// with the bug ref.Break("no-size-label") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("no-size-label") }

func main() {}
