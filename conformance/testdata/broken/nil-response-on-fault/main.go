// Command nil-response-on-fault is a deliberately broken provider: the reference provider
// with the bug ref.Break("nil-response-on-fault") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("nil-response-on-fault") }

func main() {}
