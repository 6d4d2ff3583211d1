// Command refcloud is the correct reference provider the conformance
// suite's own tests run against (see package ref).
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.Register(ref.None) }

func main() {}
