// Command providerid is a correct stateful provider that finds its
// instance by the spec.providerID it writes with machine_update in Create
// (see ref.ByProviderID): conformance must pass it in the stateful profile.
package main

import "github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"

func init() { ref.RegisterKeyed(ref.ByProviderID, ref.None) }

func main() {}
