package hostmodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func updateCall(t *testing.T, m *clusterv1alpha1.Machine, calls *int) *Call {
	c := testCall(t, &Env{}, abi.MethodCreate, `{}`)
	c.Spec = nil
	c.Machine = m
	c.Data = &Data{Update: func(cur *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
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
		Finalizers:  []string{"keep", "old"},
		Annotations: map[string]string{"stale": "x", FinalizersAnnotation: "old"}}}
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
	if owned := got.Annotations[FinalizersAnnotation]; owned != "new" {
		t.Errorf("the host's record of the provider's finalizers is %q, want %q", owned, "new")
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
		"rename":        `{"mergePatch":{"metadata":{"name":"other"}}}`,
		"new uid":       `{"mergePatch":{"metadata":{"uid":"x"}}}`,
		"namespace":     `{"mergePatch":{"metadata":{"namespace":"kube-system"}}}`,
		"kind":          `{"mergePatch":{"kind":"Secret"}}`,
		"not object":    `{"mergePatch":[1]}`,
		"bad json":      `{"addFinalizers":`,
		"invalid type":  `{"mergePatch":{"spec":{"providerID":7}}}`,
		"unknown field": `{"anotations":{"a":"b"}}`,
		"another case":  `{"providerId":"x"}`,
		"trailing data": `{"labels":{"a":"b"}} {}`,
		"not an object": `["labels"]`,
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
	t.Run("unknown field is named", func(t *testing.T) {
		calls := 0
		c := updateCall(t, m, &calls)
		_, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{"labels":{"a":"b"},"finalizers":["x"]}`))
		var he *Error
		if !errors.As(err, &he) || he.Errno != abi.ErrnoInvalid || !strings.Contains(he.Message, `unknown field "finalizers"`) ||
			!strings.Contains(he.Message, "SPEC §6.3") {
			t.Fatalf("want INVALID naming the field and SPEC §6.3, got %v", err)
		}
		if calls != 0 {
			t.Fatal("the updater ran for a refused change")
		}
	})
	t.Run("outside create and delete", func(t *testing.T) {
		c := testCall(t, &Env{}, abi.MethodGet, `{}`)
		c.Machine = m
		var he *Error
		if _, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{}`)); !errors.As(err, &he) || he.Errno != abi.ErrnoUnavailable {
			t.Fatalf("want ErrnoUnavailable, got %v", err)
		}
	})
}

// What a provider may not do to its Machine (abi/SPEC.md §6.3): every
// request here is refused before the updater runs.
func TestMachineUpdateLimits(t *testing.T) {
	ref := `{"secretKeyRef":{"namespace":"kube-system","name":"admin-token","key":"token"}}`
	now := metav1.Now()
	base := func() *clusterv1alpha1.Machine {
		m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u",
			Finalizers:  []string{"machine-delete-finalizer", "mine"},
			Annotations: map[string]string{FinalizersAnnotation: "mine", "wasmprov.io/other": "x"},
			Labels:      map[string]string{"wasmprov.io/pool": "p"}}}
		m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(`{"cloudProviderSpec":{"token":"t"}}`)}
		return m
	}
	for name, tc := range map[string]struct {
		req   string
		errno abi.Errno
	}{
		"another controller's finalizer":    {`{"removeFinalizers":["machine-delete-finalizer"]}`, abi.ErrnoDenied},
		"finalizers through a merge patch":  {`{"mergePatch":{"metadata":{"finalizers":[]}}}`, abi.ErrnoInvalid},
		"deletionTimestamp":                 {`{"mergePatch":{"metadata":{"deletionTimestamp":"` + now.UTC().Format("2006-01-02T15:04:05Z") + `"}}}`, abi.ErrnoInvalid},
		"ownerReferences":                   {`{"mergePatch":{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"x","uid":"y"}]}}}`, abi.ErrnoInvalid},
		"status":                            {`{"mergePatch":{"status":{"errorReason":"CreateError"}}}`, abi.ErrnoInvalid},
		"metadata replaced":                 {`{"mergePatch":{"metadata":null}}`, abi.ErrnoInvalid},
		"generation":                        {`{"mergePatch":{"metadata":{"generation":7}}}`, abi.ErrnoInvalid},
		"a host annotation":                 {`{"annotations":{"wasmprov.io/provider-finalizers":"machine-delete-finalizer"}}`, abi.ErrnoDenied},
		"a host annotation by patch":        {`{"mergePatch":{"metadata":{"annotations":{"wasmprov.io/provider-finalizers":"machine-delete-finalizer"}}}}`, abi.ErrnoDenied},
		"every annotation wiped":            {`{"mergePatch":{"metadata":{"annotations":null}}}`, abi.ErrnoDenied},
		"a new host annotation":             {`{"mergePatch":{"metadata":{"annotations":{"wasmprov.io/new":"x"}}}}`, abi.ErrnoDenied},
		"a secret reference by patch":       {`{"mergePatch":{"spec":{"providerSpec":{"value":{"cloudProviderSpec":{"token":` + ref + `}}}}}}`, abi.ErrnoDenied},
		"a secret reference, spec replaced": {`{"mergePatch":{"spec":{"providerSpec":{"value":{"x":[` + ref + `]}}}}}`, abi.ErrnoDenied},
		"an empty finalizer":                {`{"addFinalizers":[""]}`, abi.ErrnoInvalid},
		// SPEC §6.3: host-owned keys are refused in labels as in annotations.
		"a host label":                {`{"labels":{"wasmprov.io/provider":"other"}}`, abi.ErrnoDenied},
		"a host label by patch":       {`{"mergePatch":{"metadata":{"labels":{"wasmprov.io/provider":"other"}}}}`, abi.ErrnoDenied},
		"a host label removed":        {`{"labels":{"wasmprov.io/pool":null}}`, abi.ErrnoDenied},
		"every label wiped":           {`{"mergePatch":{"metadata":{"labels":null}}}`, abi.ErrnoDenied},
		"a label the API refuses":     {`{"labels":{"tier":"has spaces"}}`, abi.ErrnoInvalid},
		"a label key the API refuses": {`{"labels":{"a/b/c":"v"}}`, abi.ErrnoInvalid},
		"an annotation key refused":   {`{"annotations":{"-bad-":"v"}}`, abi.ErrnoInvalid},
		"terminal escapes in a value": {`{"annotations":{"example.com/x":"\u001b]0;owned\u0007"}}`, abi.ErrnoInvalid},
		"a bidi override in a value":  {`{"annotations":{"example.com/x":"abc\u202edef"}}`, abi.ErrnoInvalid},
		"annotations over 256 KiB":    {`{"annotations":{"example.com/x":"` + strings.Repeat("a", 256<<10) + `"}}`, abi.ErrnoInvalid},
		"a host finalizer":            {`{"addFinalizers":["wasmprov.io/hold"]}`, abi.ErrnoDenied},
		"25,000 labels (1.3 MB)":      {`{"labels":{` + manyLabels(25000) + `}}`, abi.ErrnoInvalid},
		"a 2 MiB provider spec":       {`{"mergePatch":{"spec":{"providerSpec":{"value":{"cloudProviderSpec":{"token":"t","pad":"` + strings.Repeat("x", 2<<20) + `"}}}}}}`, abi.ErrnoInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			c := updateCall(t, base(), &calls)
			_, err := c.Invoke(abi.ImportMachineUpdate, []byte(tc.req))
			var he *Error
			if !errors.As(err, &he) || he.Errno != tc.errno {
				t.Fatalf("want %s, got %v", tc.errno, err)
			}
			if calls != 0 {
				t.Fatal("the updater ran for a refused change")
			}
		})
	}
	// What it may do: its own finalizer, labels, annotations, the spec.
	calls := 0
	c := updateCall(t, base(), &calls)
	out, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{"removeFinalizers":["mine"],
		"mergePatch":{"metadata":{"labels":{"l":"v"},"annotations":{"a":"b"}},"spec":{"providerSpec":{"value":{"cloudProviderSpec":{"token":"t","serverID":"42"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got clusterv1alpha1.Machine
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Finalizers, ",") != "machine-delete-finalizer" || got.Labels["l"] != "v" || got.Annotations["a"] != "b" ||
		got.Annotations["wasmprov.io/other"] != "x" || !strings.Contains(string(got.Spec.ProviderSpec.Value.Raw), `"serverID":"42"`) {
		t.Fatalf("allowed update not applied: %+v", got)
	}
	if _, ok := got.Annotations[FinalizersAnnotation]; ok {
		t.Errorf("the record of owned finalizers should be gone with the last one: %v", got.Annotations)
	}
}

// The controller's finalizer, added by a provider before the controller
// added it, would count as the provider's own, which it may remove: the
// Machine could then go while its instance stays in the cloud.
func TestMachineUpdateCannotOwnTheControllersFinalizer(t *testing.T) {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u"}}
	calls := 0
	c := updateCall(t, m, &calls)
	_, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{"addFinalizers":["machine-delete-finalizer"]}`))
	var he *Error
	if !errors.As(err, &he) || he.Errno != abi.ErrnoDenied || calls != 0 {
		t.Fatalf("want DENIED before the updater runs, got %v (updater ran %d times)", err, calls)
	}
	// Present already, adding it is no change and stays allowed.
	m.Finalizers = []string{ControllerFinalizer}
	if _, err := updateCall(t, m, &calls).Invoke(abi.ImportMachineUpdate, []byte(`{"addFinalizers":["machine-delete-finalizer","example.com/mine"]}`)); err != nil {
		t.Fatal(err)
	}
}

// manyLabels is n distinct labels of a JSON object's body.
func manyLabels(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"example.com/label-%05d":"value-value-value-%05d"`, i, i)
	}
	return b.String()
}
