package cloud

import (
	"context"
	"errors"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
)

// SeedProvider returns p as the seed's Provider. Every call runs with the
// context ctx returns (context.Background when ctx is nil): use it to tie
// calls to a controller's lifetime; a wasm provider's policy bounds each
// call either way.
//
// Create and Delete take their updater and PV lister from
// MachineCreateDeleteData; the other methods get no call data, as the
// seed gives them none. Delete is Cleanup: an unfinished deletion is a
// retriable error wrapping provider.ErrDeletionInProgress (a
// *errors.RetryableError when the provider gave a hint), as a seed-era
// provider whose deletion is not finished would return, and the caller
// calls Delete again.
func SeedProvider(p provider.Interface, ctx func() context.Context) Provider {
	if ctx == nil {
		ctx = context.Background
	}
	return &seedView{p: p, ctx: ctx}
}

type seedView struct {
	p   provider.Interface
	ctx func() context.Context
}

func (s *seedView) AddDefaults(spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return s.p.AddDefaults(s.ctx(), spec, nil)
}

func (s *seedView) Validate(spec clusterv1alpha1.MachineSpec) error {
	return s.p.Validate(s.ctx(), spec, nil)
}

func (s *seedView) Get(m *clusterv1alpha1.Machine) (instance.Instance, error) {
	return s.p.Get(s.ctx(), m, nil)
}

func (s *seedView) GetCloudConfig(spec clusterv1alpha1.MachineSpec) (string, string, error) {
	return s.p.GetCloudConfig(s.ctx(), spec, nil)
}

func (s *seedView) Create(m *clusterv1alpha1.Machine, data *MachineCreateDeleteData, userdata string) (instance.Instance, error) {
	return s.p.Create(s.ctx(), m, data.provider(), userdata)
}

func (s *seedView) Delete(m *clusterv1alpha1.Machine, data *MachineCreateDeleteData) error {
	d := data.provider()
	if d == nil {
		d = &provider.Data{}
	}
	var note string
	var retryAfter time.Duration
	d.Progress = func(n string, r time.Duration) { note, retryAfter = n, r }
	done, err := s.p.Cleanup(s.ctx(), m, d)
	if err != nil || done {
		return err
	}
	err = provider.ErrDeletionInProgress
	if note != "" {
		err = &inProgress{note: note}
	}
	if retryAfter > 0 {
		err = &cloudprovidererrors.RetryableError{RetryAfter: retryAfter, Err: err}
	}
	return err
}

func (s *seedView) MachineMetricsLabels(m *clusterv1alpha1.Machine) (map[string]string, error) {
	return s.p.MachineMetricsLabels(s.ctx(), m, nil)
}

func (s *seedView) MigrateUID(m *clusterv1alpha1.Machine, uid types.UID) error {
	return s.p.MigrateUID(s.ctx(), m, uid, nil)
}

// inProgress is ErrDeletionInProgress with the provider's note.
type inProgress struct{ note string }

func (e *inProgress) Error() string { return provider.ErrDeletionInProgress.Error() + ": " + e.note }
func (e *inProgress) Is(target error) bool {
	return target == provider.ErrDeletionInProgress
}

// provider is the provider.Data of the seed's call data: its updater and
// its PV lister. A nil data gives nil.
func (data *MachineCreateDeleteData) provider() *provider.Data {
	if data == nil {
		return nil
	}
	out := &provider.Data{Update: data.Updater}
	if l := data.PVLister; l != nil {
		out.ListPersistentVolumes = provider.FromLister(l)
	}
	return out
}

// FromSeed returns a provider written to the seed's contract (compiled
// into the host) as a provider.Interface, so one controller drives it
// beside wasm providers. The seed has no context: a call whose context is
// already done does not start, a running one completes. Cleanup is Get,
// then Delete, done once Get finds nothing; SetMetricsForMachines does
// nothing; the Data's Logger, Objects and
// Progress have no seed counterpart and are not used.
func FromSeed(p Provider) provider.Interface { return fromSeed{p} }

type fromSeed struct{ p Provider }

func (f fromSeed) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, _ *provider.Data) (clusterv1alpha1.MachineSpec, error) {
	if err := ctx.Err(); err != nil {
		return spec, err
	}
	return f.p.AddDefaults(spec)
}

func (f fromSeed) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, _ *provider.Data) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.p.Validate(spec)
}

func (f fromSeed) Get(ctx context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (instance.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.p.Get(m)
}

func (f fromSeed) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, _ *provider.Data) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	return f.p.GetCloudConfig(spec)
}

func (f fromSeed) Create(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data, userdata string) (instance.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.p.Create(m, seedData(ctx, data), userdata)
}

// Cleanup is the seed's deletion: Get, and when the instance is still
// there, Delete and "not done" — a seed provider's Delete may return while
// the cloud deletes, so only a Get that finds nothing is done.
func (f fromSeed) Cleanup(ctx context.Context, m *clusterv1alpha1.Machine, data *provider.Data) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, err := f.p.Get(m)
	switch {
	case cloudprovidererrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	err = f.p.Delete(m, seedData(ctx, data))
	if err != nil && !cloudprovidererrors.IsNotFound(err) && !errors.Is(err, provider.ErrDeletionInProgress) {
		return false, err
	}
	return false, nil
}

func (f fromSeed) MachineMetricsLabels(ctx context.Context, m *clusterv1alpha1.Machine, _ *provider.Data) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.p.MachineMetricsLabels(m)
}

func (f fromSeed) MigrateUID(ctx context.Context, m *clusterv1alpha1.Machine, uid types.UID, _ *provider.Data) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.p.MigrateUID(m, uid)
}

func (fromSeed) SetMetricsForMachines(context.Context, clusterv1alpha1.MachineList, *provider.Data) error {
	return nil
}

// seedData is the seed's call data of d: its updater, and its PV lister
// as a lister (whose List runs with ctx).
func seedData(ctx context.Context, d *provider.Data) *MachineCreateDeleteData {
	if d == nil {
		return &MachineCreateDeleteData{}
	}
	out := &MachineCreateDeleteData{Updater: d.Update}
	if d.ListPersistentVolumes != nil {
		out.PVLister = pvLister{ctx: ctx, list: d.ListPersistentVolumes}
	}
	return out
}

// pvLister is a PersistentVolumeLister over a provider.PersistentVolumeLister.
type pvLister struct {
	ctx  context.Context
	list provider.PersistentVolumeLister
}

func (l pvLister) List(sel labels.Selector) ([]*corev1.PersistentVolume, error) {
	pvs, err := l.list(l.ctx, sel)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.PersistentVolume, len(pvs))
	for i := range pvs {
		out[i] = &pvs[i]
	}
	return out, nil
}

func (l pvLister) Get(name string) (*corev1.PersistentVolume, error) {
	pvs, err := l.list(l.ctx, labels.Everything())
	if err != nil {
		return nil, err
	}
	for i := range pvs {
		if pvs[i].Name == name {
			return &pvs[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("persistentvolumes"), name)
}

var _ listerscorev1.PersistentVolumeLister = pvLister{}
