package cloud_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// cleaner is a provider.Interface whose Cleanup answers from a script and
// records the Data it got; the other methods report the context's
// namespace.
type cleaner struct {
	done       []bool
	note       string
	retryAfter time.Duration
	err        error
	calls      int
	pvs        int
	updated    bool
}

func (c *cleaner) AddDefaults(ctx context.Context, s clusterv1alpha1.MachineSpec, _ *provider.Data) (clusterv1alpha1.MachineSpec, error) {
	return s, ctx.Err()
}
func (c *cleaner) Validate(ctx context.Context, _ clusterv1alpha1.MachineSpec, _ *provider.Data) error {
	return ctx.Err()
}
func (c *cleaner) Get(context.Context, *clusterv1alpha1.Machine, *provider.Data) (instance.Instance, error) {
	return nil, cloudprovidererrors.ErrInstanceNotFound
}
func (c *cleaner) GetCloudConfig(context.Context, clusterv1alpha1.MachineSpec, *provider.Data) (string, string, error) {
	return "", "", nil
}
func (c *cleaner) Create(_ context.Context, m *clusterv1alpha1.Machine, d *provider.Data, _ string) (instance.Instance, error) {
	if d == nil || d.Update == nil {
		return nil, errors.New("no updater")
	}
	if _, err := d.Update(m, func(m *clusterv1alpha1.Machine) { m.Labels = map[string]string{"created": "yes"} }); err != nil {
		return nil, err
	}
	c.updated = true
	return &instance.Static{InstanceID: "i-1"}, nil
}
func (c *cleaner) Cleanup(ctx context.Context, _ *clusterv1alpha1.Machine, d *provider.Data) (bool, error) {
	c.calls++
	if d != nil && d.ListPersistentVolumes != nil {
		pvs, err := d.ListPersistentVolumes(ctx, labels.Everything())
		if err != nil {
			return false, err
		}
		c.pvs = len(pvs)
	}
	if c.err != nil {
		return false, c.err
	}
	done := c.done[min(c.calls-1, len(c.done)-1)]
	if !done && d != nil && d.Progress != nil {
		d.Progress(c.note, c.retryAfter)
	}
	return done, nil
}
func (c *cleaner) MachineMetricsLabels(context.Context, *clusterv1alpha1.Machine, *provider.Data) (map[string]string, error) {
	return map[string]string{"size": "s"}, nil
}
func (c *cleaner) MigrateUID(context.Context, *clusterv1alpha1.Machine, types.UID, *provider.Data) error {
	return nil
}
func (c *cleaner) SetMetricsForMachines(context.Context, clusterv1alpha1.MachineList, *provider.Data) error {
	return nil
}

func pvLister(t *testing.T, names ...string) listerscorev1.PersistentVolumeLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range names {
		if err := idx.Add(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	return listerscorev1.NewPersistentVolumeLister(idx)
}

// The seed's Delete over Cleanup: done is nil; not done is an error
// wrapping ErrDeletionInProgress, with the provider's note, and a
// RetryableError when it gave a hint; the seed's PVLister reaches
// Cleanup's Data.
func TestSeedProviderDelete(t *testing.T) {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
	c := &cleaner{done: []bool{false, false, true}, note: "server 7 is stopping", retryAfter: 3 * time.Second}
	seed := cloud.SeedProvider(c, nil)
	data := &cloud.MachineCreateDeleteData{PVLister: pvLister(t, "a", "b")}

	err := seed.Delete(m, data)
	if !errors.Is(err, provider.ErrDeletionInProgress) {
		t.Fatalf("first Delete: %v, want ErrDeletionInProgress", err)
	}
	if d, ok := cloudprovidererrors.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("retry hint %v, %v; want 3s", d, ok)
	}
	if got := err.Error(); !strings.Contains(got, "deletion in progress: server 7 is stopping") {
		t.Errorf("error %q does not carry the note", got)
	}
	if c.pvs != 2 {
		t.Errorf("Cleanup saw %d PersistentVolumes, want the lister's 2", c.pvs)
	}
	c.note, c.retryAfter = "", 0
	if err := seed.Delete(m, nil); !errors.Is(err, provider.ErrDeletionInProgress) || errors.As(err, new(*cloudprovidererrors.RetryableError)) {
		t.Fatalf("second Delete: %v, want ErrDeletionInProgress without a hint", err)
	}
	if err := seed.Delete(m, nil); err != nil {
		t.Fatalf("third Delete: %v, want done", err)
	}
	c.err = cloudprovidererrors.TerminalError{Reason: clusterv1alpha1.DeleteMachineError, Message: "no"}
	if ok, _, _ := cloudprovidererrors.IsTerminalError(seed.Delete(m, nil)); !ok {
		t.Fatal("a terminal Cleanup error is not the seed Delete's")
	}
}

// The seed's methods run with the context ctx returns.
func TestSeedProviderContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seed := cloud.SeedProvider(&cleaner{done: []bool{true}}, func() context.Context { return ctx })
	if err := seed.Validate(clusterv1alpha1.MachineSpec{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Validate under a cancelled context: %v", err)
	}
	c := &cleaner{done: []bool{true}}
	live := cloud.SeedProvider(c, nil)
	if err := live.Validate(clusterv1alpha1.MachineSpec{}); err != nil {
		t.Fatalf("Validate with the default context: %v", err)
	}
	// Create's updater is the seed data's.
	var stored *clusterv1alpha1.Machine
	update := func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		stored = m.DeepCopy()
		modify(stored)
		return stored, nil
	}
	if _, err := live.Create(&clusterv1alpha1.Machine{}, &cloud.MachineCreateDeleteData{Updater: update}, ""); err != nil || !c.updated {
		t.Fatalf("Create: %v, updated %v", err, c.updated)
	}
	if stored == nil || stored.Labels["created"] != "yes" {
		t.Fatalf("the seed's updater did not store the change: %+v", stored)
	}
}

// seedCloud is a seed Provider: Delete starts a deletion that ends after
// steps further Gets.
type seedCloud struct {
	exists, deleting bool
	steps            int
	gets, deletes    int
	pvs              int
}

func (s *seedCloud) AddDefaults(spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return spec, nil
}
func (s *seedCloud) Validate(clusterv1alpha1.MachineSpec) error { return nil }
func (s *seedCloud) Get(*clusterv1alpha1.Machine) (instance.Instance, error) {
	s.gets++
	if s.deleting {
		if s.steps == 0 {
			s.exists, s.deleting = false, false
		}
		s.steps--
	}
	if !s.exists {
		return nil, cloudprovidererrors.ErrInstanceNotFound
	}
	return &instance.Static{InstanceID: "i-1"}, nil
}
func (s *seedCloud) GetCloudConfig(clusterv1alpha1.MachineSpec) (string, string, error) {
	return "", "", nil
}
func (s *seedCloud) Create(*clusterv1alpha1.Machine, *cloud.MachineCreateDeleteData, string) (instance.Instance, error) {
	s.exists = true
	return &instance.Static{InstanceID: "i-1"}, nil
}
func (s *seedCloud) Delete(_ *clusterv1alpha1.Machine, d *cloud.MachineCreateDeleteData) error {
	s.deletes++
	if d.PVLister != nil {
		pvs, err := d.PVLister.List(labels.Everything())
		if err != nil {
			return err
		}
		s.pvs = len(pvs)
	}
	s.deleting = true
	return nil
}
func (s *seedCloud) MachineMetricsLabels(*clusterv1alpha1.Machine) (map[string]string, error) {
	return nil, nil
}
func (s *seedCloud) MigrateUID(*clusterv1alpha1.Machine, types.UID) error { return nil }

// A seed provider's deletion through Cleanup: Get, Delete and not done
// while the instance is there; done once Get finds nothing. A call whose
// context is done does not reach the provider.
func TestFromSeedCleanup(t *testing.T) {
	s := &seedCloud{exists: true, steps: 1}
	p := cloud.FromSeed(s)
	m := &clusterv1alpha1.Machine{}
	pvs := []corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}
	data := &provider.Data{ListPersistentVolumes: func(context.Context, labels.Selector) ([]corev1.PersistentVolume, error) { return pvs, nil }}
	var rounds []bool
	for range 5 {
		done, err := p.Cleanup(context.Background(), m, data)
		if err != nil {
			t.Fatal(err)
		}
		rounds = append(rounds, done)
		if done {
			break
		}
	}
	if len(rounds) != 3 || rounds[2] != true || rounds[0] || rounds[1] {
		t.Fatalf("Cleanup answers %v, want not done twice (Delete, then the instance still there), then done", rounds)
	}
	if s.deletes != 2 || s.pvs != 1 {
		t.Errorf("%d Deletes seeing %d PersistentVolumes, want 2 seeing 1", s.deletes, s.pvs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gets := s.gets
	if _, err := p.Cleanup(ctx, m, nil); !errors.Is(err, context.Canceled) || s.gets != gets {
		t.Fatalf("Cleanup under a cancelled context: %v, %d Gets", err, s.gets-gets)
	}
	if err := p.SetMetricsForMachines(context.Background(), clusterv1alpha1.MachineList{}, nil); err != nil {
		t.Fatal(err)
	}
}
