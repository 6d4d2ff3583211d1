// Command annotation is a correct stateful provider that finds its
// instance by an annotation it writes with machine_update in Create (see
// ref.ByAnnotation): conformance must pass it in the stateful profile.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.RegisterKeyed(ref.ByAnnotation, ref.None) }

func main() {}
