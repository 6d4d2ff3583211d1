//go:build !wasip1

// Package hetznertest is the host-side harness shared by the Hetzner
// provider's tests and demo: a fake cluster (client-go's fake clientset
// with informer-backed listers), an in-memory Machine store with
// machine-controller's updater semantics, and Machine builders.
//
// There is no clientset for cluster.k8s.io Machines, so Machines live in
// MachineStore: every write bumps a resourceVersion, a write based on a
// stale resourceVersion fails with a Kubernetes Conflict error, and
// Updater re-reads and re-applies the change on conflicts
// (retry.RetryOnConflict), as machine-controller's MachineUpdater does.
package hetznertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"
)

// Namespace holds the test Secrets and Machines.
const Namespace = "kube-system"

// MachineEvent is one write to the store, for tests and the demo to show
// what happened when.
type MachineEvent struct {
	Time            time.Time
	Machine         string
	ResourceVersion string
	Finalizers      []string
	Annotations     map[string]string
}

// MachineStore keeps Machines in memory with resourceVersion and conflict
// semantics.
type MachineStore struct {
	mu       sync.Mutex
	rv       int64
	machines map[types.NamespacedName]*clusterv1alpha1.Machine
	events   []MachineEvent
	// FailUpdate, when set, is asked before every update; an error it
	// returns fails the write (e.g. to simulate a controller crash).
	FailUpdate func(m *clusterv1alpha1.Machine) error
}

// NewMachineStore returns an empty store.
func NewMachineStore() *MachineStore {
	return &MachineStore{machines: map[types.NamespacedName]*clusterv1alpha1.Machine{}}
}

func key(m *clusterv1alpha1.Machine) types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

var machineResource = schema.GroupResource{Group: "cluster.k8s.io", Resource: "machines"}

// Add stores a new Machine and returns the stored copy.
func (s *MachineStore) Add(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	m = m.DeepCopy()
	s.rv++
	m.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.machines[key(m)] = m
	return m.DeepCopy()
}

// Get returns a copy of the stored Machine.
func (s *MachineStore) Get(ns, name string) (*clusterv1alpha1.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return nil, apierrors.NewNotFound(machineResource, name)
	}
	return m.DeepCopy(), nil
}

// Update writes m if its resourceVersion is current, else returns a
// Conflict error.
func (s *MachineStore) Update(m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.machines[key(m)]
	if !ok {
		return nil, apierrors.NewNotFound(machineResource, m.Name)
	}
	if cur.ResourceVersion != m.ResourceVersion {
		return nil, apierrors.NewConflict(machineResource, m.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if s.FailUpdate != nil {
		if err := s.FailUpdate(m); err != nil {
			return nil, err
		}
	}
	m = m.DeepCopy()
	s.rv++
	m.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.machines[key(m)] = m
	ann := map[string]string{}
	for k, v := range m.Annotations {
		ann[k] = v
	}
	s.events = append(s.events, MachineEvent{Time: time.Now(), Machine: m.Name, ResourceVersion: m.ResourceVersion,
		Finalizers: append([]string(nil), m.Finalizers...), Annotations: ann})
	return m.DeepCopy(), nil
}

// Touch bumps a Machine's resourceVersion, as a concurrent writer would.
func (s *MachineStore) Touch(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.machines[types.NamespacedName{Namespace: ns, Name: name}]; ok {
		s.rv++
		m.ResourceVersion = strconv.FormatInt(s.rv, 10)
	}
}

// Delete removes a Machine.
func (s *MachineStore) Delete(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.machines, types.NamespacedName{Namespace: ns, Name: name})
}

// Events returns the writes of a Machine (all when name is "").
func (s *MachineStore) Events(name string) []MachineEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MachineEvent
	for _, e := range s.events {
		if name == "" || e.Machine == name {
			out = append(out, e)
		}
	}
	return out
}

// Updater is machine-controller's MachineUpdater over the store: fetch the
// current Machine, apply modify, write; again on a conflict.
func (s *MachineStore) Updater() provider.MachineUpdater {
	return func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		var updated *clusterv1alpha1.Machine
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := s.Get(m.Namespace, m.Name)
			if err != nil {
				return err
			}
			modify(cur)
			updated, err = s.Update(cur)
			return err
		})
		return updated, err
	}
}

// Cluster is a fake cluster: a client-go fake clientset for Secrets and
// PersistentVolumes, an informer-backed PV lister, and the Machine store.
type Cluster struct {
	Kube     *fake.Clientset
	PVLister corelisters.PersistentVolumeLister
	Machines *MachineStore
	factory  informers.SharedInformerFactory
	stop     chan struct{}
}

// NewCluster starts the informers and waits for their caches.
func NewCluster() *Cluster {
	kube := fake.NewClientset()
	f := informers.NewSharedInformerFactory(kube, 0)
	pvs := f.Core().V1().PersistentVolumes()
	lister := pvs.Lister()
	_ = pvs.Informer()
	c := &Cluster{Kube: kube, PVLister: lister, Machines: NewMachineStore(), factory: f, stop: make(chan struct{})}
	f.Start(c.stop)
	f.WaitForCacheSync(c.stop)
	return c
}

// Close stops the informers.
func (c *Cluster) Close() {
	close(c.stop)
	c.factory.Shutdown()
}

// Data is what the controller passes to Create and Cleanup: the Machines'
// updater and the informer's PersistentVolumes.
func (c *Cluster) Data() *provider.Data {
	return &provider.Data{
		Update:                c.Machines.Updater(),
		ListPersistentVolumes: provider.FromLister(c.PVLister),
	}
}

// AddSecret creates a Secret with one key.
func (c *Cluster) AddSecret(ctx context.Context, name, k, v string) error {
	_, err := c.Kube.CoreV1().Secrets(Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Data:       map[string][]byte{k: []byte(v)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// AddCSIVolume creates a PersistentVolume of the Hetzner CSI driver backed
// by volume volumeID and waits until the lister sees it.
func (c *Cluster) AddCSIVolume(ctx context.Context, name string, volumeID int64) error {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.hetzner.cloud", VolumeHandle: strconv.FormatInt(volumeID, 10), FSType: "ext4",
			}},
			StorageClassName: "hcloud-volumes",
		},
	}
	if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; i < 500; i++ {
		if _, err := c.PVLister.Get(name); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("persistent volume %s never reached the lister", name)
}

// TokenRef is a ConfigVarString referencing the Secret key holding the
// token.
func TokenRef(secret, k string) map[string]any {
	return map[string]any{"secretKeyRef": map[string]any{"namespace": Namespace, "name": secret, "key": k}}
}

// Machine builds a Machine whose providerSpec carries cloudProviderSpec
// and the operating system.
func Machine(name, uid, os string, cloudProviderSpec map[string]any) *clusterv1alpha1.Machine {
	raw, _ := json.Marshal(map[string]any{
		"cloudProvider":       "hetzner",
		"cloudProviderSpec":   cloudProviderSpec,
		"operatingSystem":     os,
		"operatingSystemSpec": map[string]any{"distUpgradeOnBoot": false},
		"sshPublicKeys":       []string{},
	})
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID(uid)}}
	m.Spec.Name = name
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

// RawSpec builds a Machine whose providerSpec.value is raw bytes as given.
func RawSpec(name, uid string, raw string) *clusterv1alpha1.Machine {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID(uid)}}
	m.Spec.Name = name
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(raw)}
	return m
}
