package controller

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// memCloud is a provider.Interface backed by a map: one server per
// Machine UID. Its spec is {"size": "...", "invalid": bool}. Its Cleanup
// is the seed's deletion (cloud.FromSeed's): Get, then Delete and "not
// done" until Get finds nothing.
type memCloud struct {
	mu      sync.Mutex
	servers map[types.UID]*instance.Static
	creates int
	deletes int
	// finalizersAtCreate records the Machine's finalizers as Create saw them.
	finalizersAtCreate [][]string
	// failGet makes the next N Get calls fail with failErr.
	failGet int
	failErr error
	// createStarted/createRelease, when set, block Create until released.
	createStarted chan struct{}
	createRelease chan struct{}
	createCtxErr  error
	// createCtx is the context of the last Create call.
	createCtx context.Context
	// pvsAtDelete records how many PVs the PVLister showed in Delete.
	pvsAtDelete int
	// deleteSteps: Delete marks the server deleting; it disappears after
	// that many further Get calls.
	deleteSteps int
	deleting    map[types.UID]int
	// gets counts Get calls by Machine UID.
	gets map[types.UID]int
}

type memSpec struct {
	Size    string `json:"size"`
	Invalid bool   `json:"invalid"`
	// Message, with Invalid, is the terminal error's message.
	Message string `json:"message"`
}

func newMemCloud() *memCloud {
	return &memCloud{servers: map[types.UID]*instance.Static{}, deleting: map[types.UID]int{}, gets: map[types.UID]int{}}
}

func memSpecOf(s clusterv1alpha1.MachineSpec) (memSpec, error) {
	var out memSpec
	cfg, err := providerconfig.GetConfig(s.ProviderSpec.Value)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(cfg.CloudProviderSpec.Raw, &out); err != nil {
		return out, cloudprovidererrors.TerminalError{Reason: clusterv1alpha1.InvalidConfigurationMachineError, Message: err.Error()}
	}
	return out, nil
}

func (p *memCloud) AddDefaults(_ context.Context, s clusterv1alpha1.MachineSpec, _ *provider.Data) (clusterv1alpha1.MachineSpec, error) {
	return s, nil
}

func (p *memCloud) Validate(_ context.Context, s clusterv1alpha1.MachineSpec, _ *provider.Data) error {
	spec, err := memSpecOf(s)
	if err != nil {
		return err
	}
	if spec.Invalid {
		msg := "spec says invalid"
		if spec.Message != "" {
			msg = spec.Message
		}
		return cloudprovidererrors.TerminalError{Reason: clusterv1alpha1.InvalidConfigurationMachineError, Message: msg}
	}
	return nil
}

func (p *memCloud) Get(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (instance.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets[m.UID]++
	if p.failGet > 0 {
		p.failGet--
		return nil, p.failErr
	}
	s, ok := p.servers[m.UID]
	if !ok {
		return nil, cloudprovidererrors.ErrInstanceNotFound
	}
	if n, ok := p.deleting[m.UID]; ok {
		if n <= 0 {
			delete(p.servers, m.UID)
			delete(p.deleting, m.UID)
			return nil, cloudprovidererrors.ErrInstanceNotFound
		}
		p.deleting[m.UID] = n - 1
	}
	cp := *s
	return &cp, nil
}

func (p *memCloud) GetCloudConfig(context.Context, clusterv1alpha1.MachineSpec, *provider.Data) (string, string, error) {
	return "", "", nil
}

func (p *memCloud) Create(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data, _ string) (instance.Instance, error) {
	p.mu.Lock()
	started, release := p.createStarted, p.createRelease
	p.finalizersAtCreate = append(p.finalizersAtCreate, slices.Clone(m.Finalizers))
	p.createCtx = ctx
	p.mu.Unlock()
	if started != nil {
		close(started)
		<-release
		p.mu.Lock()
		p.createCtxErr = ctx.Err()
		p.mu.Unlock()
	}
	if data == nil || data.Update == nil {
		return nil, errors.New("no updater")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates++
	s := &instance.Static{
		InstanceName: m.Name, InstanceID: string(m.UID), InstanceProviderID: "mem://" + string(m.UID),
		InstanceAddresses: map[string]corev1.NodeAddressType{"10.0.0.1": corev1.NodeInternalIP, m.Name: corev1.NodeHostName},
		InstanceStatus:    instance.StatusRunning,
	}
	p.servers[m.UID] = s
	cp := *s
	return &cp, nil
}

func (p *memCloud) Cleanup(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data) (bool, error) {
	_, err := p.Get(ctx, m, nil)
	switch {
	case cloudprovidererrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, p.delete(ctx, m, data)
}

func (p *memCloud) delete(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data) error {
	n := 0
	if data != nil && data.ListPersistentVolumes != nil {
		pvs, err := data.ListPersistentVolumes(ctx, labels.Everything())
		if err != nil {
			return err
		}
		n = len(pvs)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pvsAtDelete = n
	if _, ok := p.servers[m.UID]; !ok {
		return nil
	}
	if _, ok := p.deleting[m.UID]; !ok {
		p.deletes++
		p.deleting[m.UID] = p.deleteSteps
	}
	return nil
}

func (p *memCloud) MachineMetricsLabels(_ context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (map[string]string, error) {
	spec, err := memSpecOf(m.Spec)
	if err != nil {
		return nil, err
	}
	return map[string]string{"size": spec.Size}, nil
}

func (p *memCloud) MigrateUID(context.Context, *clusterv1alpha1.Machine, types.UID, *provider.Data) error {
	return nil
}

func (p *memCloud) SetMetricsForMachines(context.Context, clusterv1alpha1.MachineList, *provider.Data) error {
	return nil
}

func (p *memCloud) getsOf(uid types.UID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets[uid]
}

func (p *memCloud) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.servers)
}
