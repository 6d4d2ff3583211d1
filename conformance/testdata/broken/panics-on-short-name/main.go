// Command panics-on-short-name is a deliberately broken provider: the reference provider
// with the bug ref.Break("panics-on-short-name") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("panics-on-short-name") }

func main() {}
