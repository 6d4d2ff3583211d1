package infrastructure

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// cloud is a provider.Interface over a map of instances by Machine UID.
// Its providerSpec is {"cloudProvider": "cloud", "cloudProviderSpec":
// {"type": ..., "refuse": "...", "defaults": bool}}: refuse makes Validate
// answer a terminal error with that message, defaults makes AddDefaults
// add "location". An instance is "creating" until bootGets Get calls saw
// it, and deletion takes deleteSteps Cleanup calls.
type cloud struct {
	mu          sync.Mutex
	instances   map[types.UID]*instance.Static
	seen        map[types.UID]int
	cleanups    map[types.UID]int
	calls       map[string]int
	userdata    []string
	bootGets    int
	deleteSteps int
	createErr   error
}

type cloudSpec struct {
	Type     string `json:"type"`
	Refuse   string `json:"refuse,omitempty"`
	Defaults bool   `json:"defaults,omitempty"`
	Location string `json:"location,omitempty"`
}

func newCloud() *cloud {
	return &cloud{instances: map[types.UID]*instance.Static{}, seen: map[types.UID]int{},
		cleanups: map[types.UID]int{}, calls: map[string]int{}}
}

func (c *cloud) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func (c *cloud) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

func (c *cloud) call(method string) {
	c.mu.Lock()
	c.calls[method]++
	c.mu.Unlock()
}

func specOf(spec clusterv1alpha1.MachineSpec) (map[string]any, cloudSpec, error) {
	var full map[string]any
	var cs struct {
		CloudProviderSpec cloudSpec `json:"cloudProviderSpec"`
	}
	if spec.ProviderSpec.Value == nil {
		return nil, cloudSpec{}, fmt.Errorf("no providerSpec")
	}
	if err := json.Unmarshal(spec.ProviderSpec.Value.Raw, &full); err != nil {
		return nil, cloudSpec{}, err
	}
	err := json.Unmarshal(spec.ProviderSpec.Value.Raw, &cs)
	return full, cs.CloudProviderSpec, err
}

func (c *cloud) AddDefaults(_ context.Context, spec clusterv1alpha1.MachineSpec, _ *provider.Data) (clusterv1alpha1.MachineSpec, error) {
	c.call("AddDefaults")
	full, cs, err := specOf(spec)
	if err != nil || !cs.Defaults {
		return spec, err
	}
	full["cloudProviderSpec"].(map[string]any)["location"] = "fsn1"
	raw, _ := json.Marshal(full)
	out := *spec.DeepCopy()
	out.ProviderSpec.Value.Raw = raw
	return out, nil
}

func (c *cloud) Validate(_ context.Context, spec clusterv1alpha1.MachineSpec, _ *provider.Data) error {
	c.call("Validate")
	_, cs, err := specOf(spec)
	if err != nil {
		return err
	}
	if cs.Refuse != "" {
		return cloudprovidererrors.TerminalError{Reason: clusterv1alpha1.InvalidConfigurationMachineError, Message: cs.Refuse}
	}
	return nil
}

func (c *cloud) Get(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (instance.Instance, error) {
	c.call("Get")
	c.mu.Lock()
	defer c.mu.Unlock()
	inst, ok := c.instances[m.UID]
	if !ok {
		return nil, cloudprovidererrors.ErrInstanceNotFound
	}
	c.seen[m.UID]++
	if c.seen[m.UID] > c.bootGets && inst.InstanceStatus == instance.StatusCreating {
		inst.InstanceStatus = instance.StatusRunning
	}
	cp := *inst
	return &cp, nil
}

func (c *cloud) GetCloudConfig(context.Context, clusterv1alpha1.MachineSpec, *provider.Data) (string, string, error) {
	return "", "cloud", nil
}

func (c *cloud) Create(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data, userdata string) (instance.Instance, error) {
	c.call("Create")
	if c.createErr != nil {
		return nil, c.createErr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.userdata = append(c.userdata, userdata)
	inst := &instance.Static{InstanceID: "srv-" + m.Name, InstanceName: m.Name,
		InstanceProviderID: "cloud://srv-" + m.Name, InstanceStatus: instance.StatusCreating,
		InstanceAddresses: map[string]corev1.NodeAddressType{"10.0.0.1": corev1.NodeInternalIP, "203.0.113.1": corev1.NodeExternalIP}}
	c.instances[m.UID] = inst
	cp := *inst
	return &cp, nil
}

func (c *cloud) Cleanup(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (bool, error) {
	c.call("Cleanup")
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.instances[m.UID]; !ok {
		return true, nil
	}
	c.cleanups[m.UID]++
	if c.cleanups[m.UID] <= c.deleteSteps {
		return false, nil
	}
	delete(c.instances, m.UID)
	return true, nil
}

func (c *cloud) MachineMetricsLabels(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (map[string]string, error) {
	c.call("MachineMetricsLabels")
	_, cs, err := specOf(m.Spec)
	return map[string]string{"size": cs.Type}, err
}

func (c *cloud) MigrateUID(context.Context, *clusterv1alpha1.Machine, types.UID, *provider.Data) error {
	return nil
}

func (c *cloud) SetMetricsForMachines(context.Context, clusterv1alpha1.MachineList, *provider.Data) error {
	return nil
}

// providers is a ProviderSource of one provider, "cloud", or none.
type providers struct {
	mu    sync.Mutex
	cloud *cloud
	asked int
}

func (p *providers) Provider(name string) (provider.Interface, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	if p.cloud == nil || name != "cloud" {
		return nil, fmt.Errorf("%w %q", provider.ErrProviderNotFound, name)
	}
	return p.cloud, nil
}

type machineT = clusterv1alpha1.Machine

func ptrRaw(r runtime.RawExtension) *runtime.RawExtension { return &r }
