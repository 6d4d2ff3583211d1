package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func init() {
	register("call", "call one provider method: wasmprov call PROVIDER.wasm METHOD -f machine.yaml", runCall)
}

func runCall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	file := fs.String("f", "", "Machine manifest (YAML or JSON)")
	policyF := addPolicyFlags(fs, "policy file (default: PROVIDER.yaml next to the module, if present)")
	userdata := fs.String("userdata", "", "file with the userdata for Create")
	newUID := fs.String("new-uid", "", "new UID for MigrateUID")
	pvFile := fs.String("pvs", "", "PersistentVolumeList manifest for Create/Delete")
	cacheDir := fs.String("cache", defaultCacheDir(), "compilation cache directory ('' disables)")
	logs := addLogFlags(fs)
	kube := addKubeFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: wasmprov call PROVIDER.wasm METHOD -f machine.yaml [flags]\n\n"+
			"METHOD is one of %s.\nCleanup is Delete as machine-controller calls it today (done: false means call again);\nSetMetricsForMachines is given the one Machine of -f.\nThe result goes to stdout as YAML; the host's and the provider's logs to stderr.\n\n", strings.Join(methodNames(), ", "))
		fs.PrintDefaults()
	}
	module, method, err := twoArgs(fs, args)
	if err != nil {
		return err
	}
	if *file == "" {
		return errors.New("-f machine.yaml is required")
	}
	machine, err := readMachine(*file)
	if err != nil {
		return err
	}
	env, err := newCLIEnv(logs, kube)
	if err != nil {
		return err
	}
	if policyF.file == "" {
		if candidate := strings.TrimSuffix(module, ".wasm") + ".yaml"; fileExists(candidate) {
			policyF.file = candidate
		}
	}
	policy, set, err := policyF.policy()
	if err != nil {
		return err
	}
	var loadOpts []runtime.LoadOption
	if set {
		loadOpts = append(loadOpts, runtime.WithPolicy(policy))
	}
	p, rt, err := loadForCLI(ctx, module, *cacheDir, env, loadOpts...)
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	var ud []byte
	if *userdata != "" {
		if ud, err = os.ReadFile(*userdata); err != nil {
			return err
		}
	}
	pvs, err := readPVs(*pvFile)
	if err != nil {
		return err
	}
	local := &localData{machine: machine.DeepCopy()}
	data := local.data(pvs)
	ctx = provider.WithMachineNamespace(ctx, machine.Namespace)
	result, err := callMethod(ctx, p, method, machine, data, string(ud), *newUID)
	if err != nil {
		return err
	}
	if local.updates > 0 {
		result["machineUpdates"] = local.updates
		result["machine"] = local.machine
	}
	return printYAML(stdout, result)
}

// callMethod calls method (any case) on p with the Machine of -f and
// returns what the call gave, by the keys printed.
func callMethod(ctx context.Context, p *runtime.Provider, method string, machine *clusterv1alpha1.Machine, data *provider.Data, userdata, newUID string) (map[string]any, error) {
	result := map[string]any{}
	switch strings.ToLower(method) {
	case "adddefaults":
		spec, err := p.AddDefaults(ctx, machine.Spec, nil)
		if err != nil {
			return nil, callFailed(err)
		}
		result["spec"] = spec
	case "validate":
		if err := p.Validate(ctx, machine.Spec, nil); err != nil {
			return nil, callFailed(err)
		}
		result["valid"] = true
	case "get":
		inst, err := p.Get(ctx, machine, nil)
		if err != nil {
			return nil, callFailed(err)
		}
		result["instance"] = instanceMap(inst)
	case "getcloudconfig":
		config, name, err := p.GetCloudConfig(ctx, machine.Spec, nil)
		if err != nil {
			return nil, callFailed(err)
		}
		result["config"], result["name"] = config, name
	case "create":
		inst, err := p.Create(ctx, machine, data, userdata)
		if err != nil {
			return nil, callFailed(err)
		}
		result["instance"] = instanceMap(inst)
	case "delete":
		// The module's own answer (IN_PROGRESS and NOT_FOUND are errors).
		if err := p.Delete(ctx, machine, data); err != nil {
			return nil, callFailed(err)
		}
		result["deleted"] = true
	case "cleanup":
		// machine-controller's current contract: done, or "call again".
		done, err := p.Cleanup(ctx, machine, data)
		if err != nil {
			return nil, callFailed(err)
		}
		result["done"] = done
	case "setmetricsformachines":
		list := clusterv1alpha1.MachineList{Items: []clusterv1alpha1.Machine{*machine}}
		if err := p.SetMetricsForMachines(ctx, list, nil); err != nil {
			return nil, callFailed(err)
		}
		prefix := runtime.MetricNamePrefix(p.Name())
		samples := []map[string]any{}
		for _, s := range p.MetricSamples() {
			samples = append(samples, map[string]any{"name": prefix + s.Name, "type": s.Type, "labels": s.Labels, "value": s.Value})
		}
		result["metrics"] = samples
	case "machinemetricslabels":
		labels, err := p.MachineMetricsLabels(ctx, machine, nil)
		if err != nil {
			return nil, callFailed(err)
		}
		result["labels"] = labels
	case "migrateuid":
		if newUID == "" {
			return nil, errors.New("MigrateUID needs --new-uid")
		}
		if err := p.MigrateUID(ctx, machine, types.UID(newUID), nil); err != nil {
			return nil, callFailed(err)
		}
		result["migrated"] = true
	default:
		return nil, fmt.Errorf("unknown method %q; want one of %s", method, strings.Join(methodNames(), ", "))
	}
	return result, nil
}

func methodNames() []string {
	return []string{"AddDefaults", "Validate", "Get", "GetCloudConfig", "Create", "Delete", "Cleanup", "MachineMetricsLabels", "MigrateUID", "SetMetricsForMachines"}
}

func twoArgs(fs *flag.FlagSet, args []string) (string, string, error) {
	// Allow flags before and after the positional arguments.
	var pos []string
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			return "", "", err
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	if len(pos) != 2 {
		fs.Usage()
		return "", "", errors.New("want PROVIDER.wasm and METHOD")
	}
	return pos[0], pos[1], nil
}

func instanceMap(inst instance.Instance) map[string]any {
	addrs := map[string]string{}
	for a, t := range inst.Addresses() {
		addrs[a] = string(t)
	}
	return map[string]any{"name": inst.Name(), "id": inst.ID(), "providerID": inst.ProviderID(),
		"status": string(inst.Status()), "addresses": addrs}
}

// callFailed describes a provider error the way machine-controller sees it.
func callFailed(err error) error {
	kind := "error (retried by the controller)"
	if ok, reason, _ := cloudprovidererrors.IsTerminalError(err); ok {
		kind = fmt.Sprintf("terminal error, reason %s (written to the Machine's status)", reason)
	} else if cloudprovidererrors.IsNotFound(err) {
		kind = "instance not found"
	} else if c := runtime.ErrorClass(err); c != "" {
		kind = string(c) + " error"
	}
	return fmt.Errorf("%s: %w", kind, err)
}

func printYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// loadForCLI loads one module with logging and resolving the Machine's
// references as env says, and the load options given (a policy).
func loadForCLI(ctx context.Context, module, cacheDir string, env cliEnv, loadOpts ...runtime.LoadOption) (*runtime.Provider, *runtime.Runtime, error) {
	opts := []runtime.Option{engineOption(), runtime.WithLogger(env.logger)}
	if env.kube != nil {
		opts = append(opts, runtime.WithKubernetesClient(env.kube))
	}
	if cacheDir != "" {
		opts = append(opts, runtime.WithCompilationCacheDir(cacheDir))
	}
	rt, err := runtime.New(opts...)
	if err != nil {
		return nil, nil, err
	}
	p, err := rt.Load(ctx, module, loadOpts...)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, err
	}
	return p, rt, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return dir + "/wasmprov/wazero"
}
