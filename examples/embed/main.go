// Command embed is the smallest program that embeds wasmprov in an existing
// Go controller: load a directory of provider modules (hot-reloaded), then
// hand a machine-controller cloud.Provider to your own reconcile code.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func main() {
	dir := flag.String("providers", "build/guests", "directory of NAME.wasm provider modules")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir, demoMachine()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dir string, m *clusterv1alpha1.Machine, opts ...runtime.Option) error {
	// 1. One runtime and registry per process; Watch hot-reloads changed files.
	rt, err := runtime.New(opts...) // add runtime.WithKubernetesClient(kube) for Secret refs
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	reg := registry.New(rt)
	defer reg.Close(context.WithoutCancel(ctx))
	if err := reg.LoadDir(ctx, dir); err != nil {
		return err
	}
	if err := reg.Watch(ctx); err != nil {
		return err
	}

	// 2. Where machine-controller calls cloudprovider.ForProvider, ask the
	// registry. The handle always routes to the provider's current version.
	var cfg struct{ CloudProvider string }
	if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &cfg); err != nil {
		return err
	}
	h, err := reg.Get(cfg.CloudProvider)
	if err != nil {
		return err
	}
	// A *registry.Handle is a provider.Interface; cloud.SeedProvider makes
	// it the seed's cloud.Provider, which code written for
	// machine-controller v0.10.x takes.
	return reconcile(cloud.SeedProvider(h, nil), m)
}

// reconcile stands for your controller's code: it knows only cloud.Provider.
func reconcile(p cloud.Provider, m *clusterv1alpha1.Machine) error {
	inst, err := p.Get(m)
	if cloudprovidererrors.IsNotFound(err) {
		data := &cloud.MachineCreateDeleteData{Updater: func(m *clusterv1alpha1.Machine, mod func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			mod(m) // a real controller writes to the API server here
			return m, nil
		}}
		inst, err = p.Create(m, data, "#cloud-config\n")
	}
	if ok, reason, msg := cloudprovidererrors.IsTerminalError(err); ok {
		return fmt.Errorf("terminal (%s): %s", reason, msg) // goes into status.errorReason
	}
	if err != nil {
		return err // retry with backoff
	}
	fmt.Printf("machine %s: instance %s, providerID %s, status %s\n", m.Name, inst.Name(), inst.ProviderID(), inst.Status())
	return nil
}

func demoMachine() *clusterv1alpha1.Machine {
	m := &clusterv1alpha1.Machine{}
	m.Name, m.Namespace, m.UID = "demo", "default", "0d5c1e52-5e1c-4b6e-9a53-4c1f8e0f3b11"
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(
		`{"cloudProvider":"fake","cloudProviderSpec":{"passValidation":true},"operatingSystem":"ubuntu"}`)}
	return m
}
