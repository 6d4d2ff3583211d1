package conformance

import (
	"strings"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// The store's updater behaves like machine-controller's: a write based on a
// stale resourceVersion conflicts, the change is re-applied to the fresh
// Machine (keeping what the other writer wrote), and the caller's Machine
// is updated in place.
func TestMachineStoreUpdaterReappliesOnConflict(t *testing.T) {
	s := newMachineStore()
	m := newMachine("wpc-store-0", uid("store"), []byte(`{}`))
	s.put(m)
	stale := s.current(m)

	// Another writer (the controller's status update) gets in first.
	other := s.current(m)
	other.Labels = map[string]string{"written-by": "controller"}
	if _, err := s.update(other); err != nil {
		t.Fatal(err)
	}

	calls := 0
	got, err := s.updater()(stale, func(m *clusterv1alpha1.Machine) {
		calls++
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["provider/id"] = "42"
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("modify ran %d times, want 2 (once on the stale copy, once after the conflict)", calls)
	}
	if got.Annotations["provider/id"] != "42" || got.Labels["written-by"] != "controller" {
		t.Errorf("updated Machine lost a write: %s, labels %v", describeMachine(got), got.Labels)
	}
	if stale.ResourceVersion != got.ResourceVersion || stale.Annotations["provider/id"] != "42" {
		t.Errorf("the caller's Machine was not updated in place: %s", describeMachine(stale))
	}
	if cur := s.current(m); cur.ResourceVersion != got.ResourceVersion || cur.Annotations["provider/id"] != "42" {
		t.Errorf("the store holds %s, want the updated Machine", describeMachine(cur))
	}
	if n, conflicts := s.stats(); n != 2 || conflicts != 1 {
		t.Errorf("stats = %d updates, %d conflicts; want 2, 1", n, conflicts)
	}
}

// touch makes the next write of a stale copy conflict.
func TestMachineStoreTouchConflicts(t *testing.T) {
	s := newMachineStore()
	m := newMachine("wpc-store-1", uid("store1"), nil)
	s.put(m)
	c := s.current(m)
	s.touch(m)
	if _, err := s.update(c); err == nil || !strings.Contains(err.Error(), "modified") {
		t.Fatalf("write of a stale copy after touch: %v, want a conflict", err)
	}
}

func TestDescribeMachineNamesWhatAProviderWrote(t *testing.T) {
	m := newMachine("wpc-d-0", "u-1", nil)
	id := "mc://7"
	m.Spec.ProviderID = &id
	m.Annotations = map[string]string{"b": "2", "a": "1"}
	m.Finalizers = []string{"f"}
	m.ResourceVersion = "3"
	want := `Machine wpc-d-0 (uid u-1, resourceVersion "3", providerID "mc://7", annotations {a="1", b="2"}, finalizers [f])`
	if got := describeMachine(m); got != want {
		t.Errorf("describeMachine = %s\nwant             %s", got, want)
	}
}
