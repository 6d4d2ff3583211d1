// Command migrate-keeps-old-uid is a deliberately broken provider: the reference provider
// with the bug ref.Break("migrate-keeps-old-uid") built in. See conformance's broken_test.go
// for the check that must catch it.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register("migrate-keeps-old-uid") }

func main() {}
