package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A guest must not choose which Secrets it reads (red-team findings 1 and
// 2): internal/testing/attackguests/secrets adds a reference to
// kube-system/admin-token through its AddDefaults result and through a
// machine_update merge patch, and reads it with config_var.
func TestGuestCannotChooseItsSecrets(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.New(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "admin-token"},
			Data: map[string][]byte{"token": []byte("cluster-admin-token")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cloud"},
			Data: map[string][]byte{"token": []byte("team-a-token")}},
	)
	rt := newRuntime(t, runtime.WithKubernetesClient(kube))
	p, err := rt.Load(ctx, testguest.Build(t, "internal/testing/attackguests/secrets"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m1", "u1", map[string]any{"cloudProvider": "secrets", "cloudProviderSpec": map[string]any{}})
	m.Namespace = "team-a"

	t.Run("AddDefaults adding a reference", func(t *testing.T) {
		spec, err := p.AddDefaults(ctx, m.Spec, nil)
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "adds secretKeyRef kube-system/admin-token")
		if strings.Contains(string(spec.ProviderSpec.Value.Raw), "admin-token") {
			t.Errorf("the refused result was returned: %s", spec.ProviderSpec.Value.Raw)
		}
	})

	t.Run("machine_update adding a reference, then config_var", func(t *testing.T) {
		store := newMachineStore(m.DeepCopy())
		inst, err := p.Create(ctx, m, &provider.Data{Update: store.updater()}, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := inst.Name(), "update=denied read=denied"; got != want {
			t.Errorf("the guest reports %q, want %q", got, want)
		}
		if stored := store.get("m1"); strings.Contains(string(stored.Spec.ProviderSpec.Value.Raw), "admin-token") {
			t.Errorf("the reference reached the stored Machine: %s", stored.Spec.ProviderSpec.Value.Raw)
		}
	})

	// A reference a person wrote is read — from the Machine's namespace,
	// and from another only if the policy allows it.
	withRef := func(ns, name string) clusterv1alpha1.MachineSpec {
		ref := map[string]any{"secretKeyRef": map[string]any{"namespace": ns, "name": name, "key": "token"}}
		return newMachine("m1", "u1", map[string]any{"cloudProvider": "secrets", "cloudProviderSpec": map[string]any{"token": ref}}).Spec
	}
	teamA := provider.WithMachineNamespace(ctx, "team-a")
	t.Run("a reference in the Machine's namespace", func(t *testing.T) {
		err := p.Validate(teamA, withRef("team-a", "cloud"), nil)
		expectCallError(t, err, runtime.ClassTerminal, nil, "read: team-a-token")
	})
	t.Run("a reference to kube-system from team-a", func(t *testing.T) {
		err := p.Validate(teamA, withRef("kube-system", "admin-token"), nil)
		expectCallError(t, err, runtime.ClassTransient, nil, `namespace "kube-system" is neither the machine's (team-a) nor allowed by the policy`)
	})
	t.Run("kube-system allowed by the policy", func(t *testing.T) {
		q, err := rt.Load(ctx, testguest.Build(t, "internal/testing/attackguests/secrets"), runtime.WithName("allowed"),
			runtime.WithPolicy(runtime.Policy{AllowedSecretNamespaces: []string{"kube-system"}}))
		if err != nil {
			t.Fatal(err)
		}
		err = q.Validate(teamA, withRef("kube-system", "admin-token"), nil)
		expectCallError(t, err, runtime.ClassTerminal, nil, "read: cluster-admin-token")
	})
}

// The references of a defaulted spec are the caller's again once stored —
// which is why AddDefaults may not add one: this checks the refusal holds
// for a reference hidden anywhere in the result, not just where the guest
// above puts it.
func TestAddDefaultsResultMayKeepButNotAddReferences(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	p, err := rt.Load(ctx, testguest.Build(t, "internal/testing/attackguests/secrets"))
	if err != nil {
		t.Fatal(err)
	}
	// The guest's result references kube-system/admin-token; a spec that
	// already held that reference may keep it.
	ref := json.RawMessage(`{"secretKeyRef":{"namespace":"kube-system","name":"admin-token","key":"token"}}`)
	spec := newMachine("m1", "u1", map[string]any{"cloudProvider": "secrets", "cloudProviderSpec": map[string]any{"old": ref}}).Spec
	out, err := p.AddDefaults(ctx, spec, nil)
	if err != nil {
		t.Fatalf("a result keeping the caller's reference was refused: %v", err)
	}
	if !strings.Contains(string(out.ProviderSpec.Value.Raw), "admin-token") {
		t.Errorf("unexpected result %s", out.ProviderSpec.Value.Raw)
	}
}
