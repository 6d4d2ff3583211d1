package hostfuncs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func updateCall(t *testing.T, m *clusterv1alpha1.Machine, calls *int) *Call {
	c := testCall(t, &Env{}, abi.MethodCreate, `{}`)
	c.Spec = nil
	c.Machine = m
	c.Data = &cloud.MachineCreateDeleteData{Updater: func(cur *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		*calls++
		next := cur.DeepCopy()
		modify(next)
		// Apply twice, as a conflict retry would: the change must be idempotent.
		modify(next)
		return next, nil
	}}
	return c
}

func TestMachineUpdate(t *testing.T) {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u",
		Finalizers: []string{"keep", "old"}, Annotations: map[string]string{"stale": "x"}}}
	calls := 0
	c := updateCall(t, m, &calls)
	id := "hcloud://42"
	v := "42"
	req, _ := json.Marshal(abi.MachineUpdate{
		AddFinalizers: []string{"new"}, RemoveFinalizers: []string{"old"},
		Annotations: map[string]*string{"server-id": &v, "stale": nil},
		Labels:      map[string]*string{"tier": &v},
		ProviderID:  &id,
		MergePatch:  json.RawMessage(`{"spec":{"metadata":{"labels":{"a":"b"}}}}`),
	})
	out, err := c.Invoke(abi.ImportMachineUpdate, req)
	if err != nil {
		t.Fatal(err)
	}
	var got clusterv1alpha1.Machine
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Finalizers, ",") != "keep,new" || got.Annotations["server-id"] != "42" ||
		got.Annotations["stale"] != "" || got.Labels["tier"] != "42" || *got.Spec.ProviderID != id ||
		got.Spec.Labels["a"] != "b" {
		t.Fatalf("update not applied as asked: %+v", got)
	}
	if calls != 1 {
		t.Fatalf("updater called %d times", calls)
	}
	// The call now sees the updated Machine.
	b, _ := c.Input(abi.InputMachine)
	if !strings.Contains(string(b), `"server-id":"42"`) {
		t.Fatalf("machine input not refreshed: %s", b)
	}
}

func TestMachineUpdateRefusals(t *testing.T) {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u"}}
	for name, req := range map[string]string{
		"rename":       `{"mergePatch":{"metadata":{"name":"other"}}}`,
		"new uid":      `{"mergePatch":{"metadata":{"uid":"x"}}}`,
		"namespace":    `{"mergePatch":{"metadata":{"namespace":"kube-system"}}}`,
		"kind":         `{"mergePatch":{"kind":"Secret"}}`,
		"not object":   `{"mergePatch":[1]}`,
		"bad json":     `{"addFinalizers":`,
		"invalid type": `{"mergePatch":{"spec":{"providerID":7}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			c := updateCall(t, m, &calls)
			_, err := c.Invoke(abi.ImportMachineUpdate, []byte(req))
			var he *Error
			if !errors.As(err, &he) || he.Errno != abi.ErrnoInvalid {
				t.Fatalf("want ErrnoInvalid, got %v", err)
			}
			if calls != 0 {
				t.Fatal("the updater ran for a refused change")
			}
		})
	}
	t.Run("outside create and delete", func(t *testing.T) {
		c := testCall(t, &Env{}, abi.MethodGet, `{}`)
		c.Machine = m
		var he *Error
		if _, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{}`)); !errors.As(err, &he) || he.Errno != abi.ErrnoUnavailable {
			t.Fatalf("want ErrnoUnavailable, got %v", err)
		}
	})
}
