package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func init() {
	register("demo", "drive a provider through its whole lifecycle (default: the fake provider)", runDemo)
}

func runDemo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	module := fs.String("provider", "build/guests/fake.wasm", "provider module")
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	logs := addLogFlags(fs)
	kube := addKubeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	env, err := newCLIEnv(logs, kube)
	if err != nil {
		return err
	}
	return demo(ctx, stdout, *module, *cacheDir, env)
}

func demo(ctx context.Context, w io.Writer, module, cacheDir string, env cliEnv) error {
	step := func(name string, d time.Duration, result any, err error) {
		if err != nil {
			fmt.Fprintf(w, "  %-22s %8s  error: %v\n", name, d.Round(time.Microsecond), err)
			return
		}
		b, _ := json.Marshal(result)
		fmt.Fprintf(w, "  %-22s %8s  %s\n", name, d.Round(time.Microsecond), b)
	}
	start := time.Now()
	fmt.Fprintf(w, "loading %s (compiling on first use, from the cache afterwards)...\n", module)
	p, rt, err := loadForCLI(ctx, module, cacheDir, env)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	fmt.Fprintf(w, "loaded provider %q in %s: sha256 %.12s, capabilities %s\n\n", p.Name(), time.Since(start).Round(time.Millisecond), p.SHA256(), capList(p.Granted()))

	machine := demoMachine()
	local := &localData{machine: machine.DeepCopy()}
	data := local.data(nil)
	ctx = provider.WithMachineNamespace(ctx, machine.Namespace)
	fmt.Fprintf(w, "lifecycle of Machine %s/%s (uid %s):\n", machine.Namespace, machine.Name, machine.UID)

	t := time.Now()
	spec, err := p.AddDefaults(ctx, machine.Spec, nil)
	step("AddDefaults", time.Since(t), json.RawMessage(spec.ProviderSpec.Value.Raw), err)
	if err != nil {
		return err
	}
	machine.Spec = spec
	t = time.Now()
	err = p.Validate(ctx, machine.Spec, nil)
	step("Validate", time.Since(t), "valid", err)
	if err != nil {
		return err
	}
	t = time.Now()
	inst, err := p.Create(ctx, machine, data, "#cloud-config\n")
	if err != nil {
		step("Create", time.Since(t), nil, err)
		return err
	}
	step("Create", time.Since(t), instanceMap(inst), nil)
	t = time.Now()
	inst, err = p.Get(ctx, machine, nil)
	if err != nil {
		step("Get", time.Since(t), nil, err)
		return err
	}
	step("Get", time.Since(t), instanceMap(inst), nil)
	t = time.Now()
	config, name, err := p.GetCloudConfig(ctx, machine.Spec, nil)
	step("GetCloudConfig", time.Since(t), map[string]string{"config": config, "name": name}, err)
	t = time.Now()
	labels, err := p.MachineMetricsLabels(ctx, machine, nil)
	step("MachineMetricsLabels", time.Since(t), labels, err)
	t = time.Now()
	err = p.MigrateUID(ctx, machine, "4f0c1d9e-new-uid", nil)
	step("MigrateUID", time.Since(t), "migrated", err)
	t = time.Now()
	err = p.Delete(ctx, machine, data)
	step("Delete", time.Since(t), "deleted", err)

	st := p.PoolStats()
	created, live, discarded := st.Created, st.Live, st.Discarded
	fmt.Fprintf(w, "\ninstances: %d created, %d live, %d discarded; total %s\n", created, live, discarded, time.Since(start).Round(time.Millisecond))
	return err
}

func demoMachine() *clusterv1alpha1.Machine {
	value, _ := json.Marshal(map[string]any{
		"cloudProvider":     "fake",
		"cloudProviderSpec": map[string]any{"passValidation": true},
		"operatingSystem":   "ubuntu",
		"sshPublicKeys":     []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDemo demo@wasmprov"},
	})
	m := &clusterv1alpha1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cluster.k8s.io/v1alpha1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo-worker-1", Namespace: "kube-system", UID: "0d6b2f5e-demo-uid"},
	}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: value}
	m.Spec.Versions.Kubelet = "1.34.1"
	return m
}
