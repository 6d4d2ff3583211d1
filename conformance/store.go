package conformance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// machineStore is the API server of a conformance run: it holds the
// Machines a check works with, so that what a provider writes with
// machine_update in Create or Delete is what its next call receives, as
// under machine-controller. Every write bumps the resourceVersion; a write
// based on a stale resourceVersion fails with a Kubernetes Conflict.
type machineStore struct {
	mu       sync.Mutex
	rv       int64
	machines map[types.NamespacedName]*clusterv1alpha1.Machine
	// updates and conflicts count the provider's writes through Updater
	// and the conflicts it re-applied after.
	updates, conflicts int
}

func newMachineStore() *machineStore {
	return &machineStore{machines: map[types.NamespacedName]*clusterv1alpha1.Machine{}}
}

var machineResource = schema.GroupResource{Group: "cluster.k8s.io", Resource: "machines"}

func keyOf(m *clusterv1alpha1.Machine) types.NamespacedName {
	return types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

// put stores m as it is (a new Machine, or one the controller replaced,
// as a migration does) with a new resourceVersion.
func (s *machineStore) put(m *clusterv1alpha1.Machine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := m.DeepCopy()
	s.rv++
	c.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.machines[keyOf(c)] = c
	*m = *c.DeepCopy()
}

// current returns a copy of the stored version of m, or of m itself if the
// store does not hold it.
func (s *machineStore) current(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.machines[keyOf(m)]; ok {
		return c.DeepCopy()
	}
	return m.DeepCopy()
}

// touch bumps m's resourceVersion, as the controller's own write of the
// Machine (its status) racing a provider call would: the provider's next
// machine_update then conflicts and must be re-applied to a fresh copy.
func (s *machineStore) touch(m *clusterv1alpha1.Machine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.machines[keyOf(m)]; ok {
		s.rv++
		c.ResourceVersion = strconv.FormatInt(s.rv, 10)
	}
}

// update writes m if its resourceVersion is the stored one.
func (s *machineStore) update(m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.machines[keyOf(m)]
	if !ok {
		return nil, apierrors.NewNotFound(machineResource, m.Name)
	}
	if cur.UID != m.UID {
		return nil, apierrors.NewConflict(machineResource, m.Name, fmt.Errorf("the Machine's UID changed"))
	}
	if m.ResourceVersion != cur.ResourceVersion {
		s.conflicts++
		return nil, apierrors.NewConflict(machineResource, m.Name,
			fmt.Errorf("the object has been modified (resourceVersion %s, stored %s)", m.ResourceVersion, cur.ResourceVersion))
	}
	c := m.DeepCopy()
	s.rv++
	s.updates++
	c.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.machines[keyOf(c)] = c
	return c.DeepCopy(), nil
}

// updater is machine-controller's MachineUpdater over the store: apply
// modify to the Machine it was given and write it; on a conflict read the
// Machine afresh and apply modify again (retry.RetryOnConflict).
func (s *machineStore) updater() provider.MachineUpdater {
	return func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		base := m.DeepCopy()
		var out *clusterv1alpha1.Machine
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			next := base.DeepCopy()
			modify(next)
			updated, err := s.update(next)
			if apierrors.IsConflict(err) {
				base = s.current(m)
			}
			out = updated
			return err
		})
		if err != nil {
			return nil, err
		}
		// machine-controller's updater updates the caller's Machine in place.
		*m = *out.DeepCopy()
		return out, nil
	}
}

// stats returns the writes and conflicts so far.
func (s *machineStore) stats() (updates, conflicts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates, s.conflicts
}

// describeMachine names what a provider received: the Machine's identity
// and everything a provider may have written to it.
func describeMachine(m *clusterv1alpha1.Machine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine %s (uid %s, resourceVersion %q", m.Name, m.UID, m.ResourceVersion)
	if m.Spec.ProviderID != nil {
		fmt.Fprintf(&b, ", providerID %q", *m.Spec.ProviderID)
	} else {
		b.WriteString(", no providerID")
	}
	if len(m.Annotations) > 0 {
		keys := make([]string, 0, len(m.Annotations))
		for k := range m.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%q", k, m.Annotations[k])
		}
		fmt.Fprintf(&b, ", annotations {%s}", strings.Join(parts, ", "))
	} else {
		b.WriteString(", no annotations")
	}
	if len(m.Finalizers) > 0 {
		fmt.Fprintf(&b, ", finalizers %v", m.Finalizers)
	}
	b.WriteString(")")
	return b.String()
}
