package cloud

import "context"

type machineNamespaceKey struct{}

// WithMachineNamespace tells a ContextProvider which namespace the Machine
// is in for the methods that get only its spec (AddDefaults, Validate,
// GetCloudConfig). wasmprov's host uses it to decide which namespaces'
// Secrets and ConfigMaps the provider may read in those calls, as it does
// from the Machine itself in the others. A controller validating a Machine
// it read from the API server passes that Machine's namespace.
func WithMachineNamespace(ctx context.Context, namespace string) context.Context {
	return context.WithValue(ctx, machineNamespaceKey{}, namespace)
}

// MachineNamespace returns the namespace set by WithMachineNamespace, or "".
func MachineNamespace(ctx context.Context) string {
	ns, _ := ctx.Value(machineNamespaceKey{}).(string)
	return ns
}
