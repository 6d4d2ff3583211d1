// Command not-found-on-fault is a deliberately broken provider: the reference provider
// with the bug ref.Break("not-found-on-fault") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("not-found-on-fault") }

func main() {}
