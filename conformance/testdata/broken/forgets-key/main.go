// Command forgets-key is a deliberately broken provider: the annotation-keyed
// provider (ref.ByAnnotation) whose Create never records the instance on the
// Machine, so Get cannot find it. See conformance's broken_test.go.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.RegisterKeyed(ref.ByAnnotation, ref.ForgetsKey) }

func main() {}
