// Package cloudprovider serves a wasmprov provider as machine-controller's
// current provider contract (package cloudprovider/types, upstream's
// pkg/cloudprovider/types): a context and a zap logger on the methods,
// ProviderData with a controller-runtime client, Cleanup that may say
// "not finished yet", and SetMetricsForMachines.
//
//	p, _ := rt.Load(ctx, wasm, runtime.WithName("hetzner"))
//	var current cloudprovidertypes.Provider = cloudprovider.New(p)
//	var seed cloud.Provider = cloud.SeedProvider(p, nil) // the same module, pool and policy
//
// New takes any provider.Interface: a loaded module, a registry Handle
// (which follows reloads), or a provider compiled into the host.
//
// What each argument becomes on the host side (provider.Data):
//
//   - the *zap.SugaredLogger receives the guest's log records of the call
//     and the host's lines about it, with its own fields and the provider's
//     name, method and Machine added; nil falls back to the runtime's
//     logger.
//   - ProviderData.Client reads the Secrets and ConfigMaps config_var
//     resolves (only those the Machine references; the host decides) and
//     lists PersistentVolumes for pv_list. Nil, or a nil ProviderData:
//     Secrets and ConfigMaps come from WithObjectReader's reader, else the
//     runtime's Kubernetes client, and pv_list answers UNAVAILABLE.
//   - ProviderData.Update persists machine_update's changes; like
//     upstream's updater it updates the Machine it is given in place. Nil:
//     machine_update answers UNAVAILABLE.
//   - ProviderData.Ctx is not used: each method's ctx bounds the call.
//     Methods without one (AddDefaults, MachineMetricsLabels,
//     SetMetricsForMachines) run under context.Background and the policy's
//     call timeout.
package cloudprovider
