//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// TestClusterAPIStampsWasmMachines proves the harness: Cluster API's own
// controllers, in the test binary, turn a MachineDeployment into Machines
// and WasmMachines cloned from the WasmMachineTemplate. Nothing reconciles
// WasmClusters or WasmMachines here: the test plays the infrastructure
// provider (status.initialization.provisioned, spec.providerID) and the
// node faker the kubelets, far enough for the MachineDeployment to become
// available, scale down and go away.
func TestClusterAPIStampsWasmMachines(t *testing.T) {
	start := time.Now()
	ns := capiNamespace(t)
	e := startClusterAPI(t, ns)

	providerSpec := map[string]any{
		"cloudProvider":     "fake",
		"cloudProviderSpec": map[string]any{"passValidation": true, "nested": map[string]any{"n": 3, "list": []any{"a", "b"}}},
		"operatingSystem":   "ubuntu",
	}
	tmpl, err := wasmMachineTemplate(ns, "workers-v1", providerSpec)
	if err != nil {
		t.Fatal(err)
	}
	e.create(tmpl)
	e.create(bootstrapSecret(ns, "workers-bootstrap", "c1", []byte("#cloud-config\n")))
	md := machineDeployment(ns, mdConfig{Name: "workers", Cluster: "c1", Replicas: 3,
		Template: "workers-v1", BootstrapSecret: "workers-bootstrap", MaxSurge: 1, MaxUnavailable: 0, Version: "v1.37.2"})
	checkWebhookDefaults(t, md)
	e.createCluster("c1", "127.0.0.1", 6443)
	e.create(md)

	// CAPI stamps three Machines and three WasmMachines.
	var wms []unstructured.Unstructured
	eventually(t, 60*time.Second, "3 Machines, each with its WasmMachine", func() (bool, string) {
		ms, wl := e.machines(), e.wasmMachines()
		wms = wl
		owned := 0
		for _, wm := range wl {
			if ownerKind(&wm) == "Machine" {
				owned++
			}
		}
		return len(ms) == 3 && len(wl) == 3 && owned == 3,
			fmt.Sprintf("%d machines, %d wasmmachines (%d owned by a Machine); md %v", len(ms), len(wl), owned, e.mdStatus("workers"))
	})
	machines := e.machines()
	checkMachineWebhookDefaults(t, machines)
	byName := map[string]clusterv1.Machine{}
	for _, m := range machines {
		byName[m.Name] = m
		if m.Spec.InfrastructureRef.Kind != "WasmMachine" || m.Spec.InfrastructureRef.APIGroup != infraGroup {
			t.Errorf("machine %s infrastructureRef = %+v", m.Name, m.Spec.InfrastructureRef)
		}
		if ptr.Deref(m.Spec.Bootstrap.DataSecretName, "") != "workers-bootstrap" {
			t.Errorf("machine %s dataSecretName = %v", m.Name, m.Spec.Bootstrap.DataSecretName)
		}
		if m.Labels[clusterv1.MachineDeploymentNameLabel] != "workers" || m.Labels[clusterv1.ClusterNameLabel] != "c1" {
			t.Errorf("machine %s labels = %v", m.Name, m.Labels)
		}
	}
	for _, wm := range wms {
		owner := ownerName(&wm)
		m, ok := byName[owner]
		if !ok {
			t.Errorf("wasmmachine %s is owned by %q, not one of the Machines", wm.GetName(), owner)
			continue
		}
		if m.Spec.InfrastructureRef.Name != wm.GetName() {
			t.Errorf("machine %s points at %s, not its wasmmachine %s", m.Name, m.Spec.InfrastructureRef.Name, wm.GetName())
		}
		got, _, _ := unstructured.NestedMap(wm.Object, "spec", "providerSpec")
		want, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec", "providerSpec")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("wasmmachine %s providerSpec = %v, want the template's %v", wm.GetName(), got, want)
		}
		if wm.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation] != "workers-v1" {
			t.Errorf("wasmmachine %s annotations = %v, want cloned from workers-v1", wm.GetName(), wm.GetAnnotations())
		}
		if wm.GetLabels()[clusterv1.ClusterNameLabel] != "c1" {
			t.Errorf("wasmmachine %s labels = %v", wm.GetName(), wm.GetLabels())
		}
	}
	t.Logf("%v: 3 Machines and WasmMachines stamped", time.Since(start).Round(time.Millisecond))

	// The infrastructure provider's part, by hand: the WasmCluster is
	// provisioned, then each WasmMachine.
	e.markWasmClusterProvisioned("c1")
	eventually(t, 30*time.Second, "Cluster infrastructure provisioned, control plane initialized", func() (bool, string) {
		c := e.getCluster("c1")
		return ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) &&
				conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition),
			fmt.Sprintf("%+v", c.Status.Initialization)
	})
	if c := e.getCluster("c1"); c.Spec.ControlPlaneEndpoint.Host != "127.0.0.1" || c.Spec.ControlPlaneEndpoint.Port != 6443 {
		t.Errorf("cluster controlPlaneEndpoint = %+v, want the WasmCluster's", c.Spec.ControlPlaneEndpoint)
	}
	e.fakeNodes()
	for i, wm := range wms {
		id := fmt.Sprintf("wasmprov://e2e/%s/%d", ns, i)
		e.patchSpec("WasmMachine", wm.GetName(), map[string]any{"providerID": id})
		e.patchStatus("WasmMachine", wm.GetName(), map[string]any{"initialization": map[string]any{"provisioned": true}})
	}
	eventually(t, 90*time.Second, "MachineDeployment available", func() (bool, string) {
		s := e.mdStatus("workers")
		return s.settled(3), fmt.Sprintf("md %v; nodes %+v; machines %s", s, e.nodeCounts(), machineStates(e.machines()))
	})
	for _, m := range e.machines() {
		if !m.Status.NodeRef.IsDefined() || m.Status.NodeRef.Name != m.Name {
			t.Errorf("machine %s nodeRef = %+v", m.Name, m.Status.NodeRef)
		}
	}
	t.Logf("%v: MachineDeployment available, nodes %+v", time.Since(start).Round(time.Millisecond), e.nodeCounts())

	// Scale down: CAPI drains one Machine's Node, deletes its WasmMachine
	// and the Node (not the node faker), then the Machine.
	e.scaleMD("workers", 2)
	eventually(t, 60*time.Second, "scaled to 2", func() (bool, string) {
		s := e.mdStatus("workers")
		n := len(e.machines())
		return s.settled(2) && n == 2 && len(e.wasmMachines()) == 2 && e.liveNodes() == 2,
			fmt.Sprintf("md %v; %d machines; %d nodes", s, n, e.liveNodes())
	})
	if n := e.nodeCounts(); n.Deleted != 0 {
		t.Errorf("node faker deleted %d nodes; CAPI should have", n.Deleted)
	}
	t.Logf("%v: scaled down, nodes %+v", time.Since(start).Round(time.Millisecond), e.nodeCounts())

	// Delete the MachineDeployment: everything below it goes.
	e.deleteMD("workers")
	eventually(t, 60*time.Second, "machines and wasmmachines gone", func() (bool, string) {
		ms, wl := e.machines(), e.wasmMachines()
		return len(ms) == 0 && len(wl) == 0, fmt.Sprintf("%d machines (%s), %d wasmmachines", len(ms), machineStates(ms), len(wl))
	})
	if n, c := e.liveNodes(), e.nodeCounts(); n != 0 || c.Deleted != 0 {
		t.Errorf("%d nodes left, node faker deleted %d; CAPI should have deleted them all", n, c.Deleted)
	}
	t.Logf("%v: all gone; node faker %+v", time.Since(start).Round(time.Millisecond), e.nodeCounts())
}

// checkWebhookDefaults runs CAPI's own MachineDeployment defaulting
// webhook on a copy of md, as the API server would on create, and fails
// if it changes anything: the builder sets everything it would.
func checkWebhookDefaults(t *testing.T, md *clusterv1.MachineDeployment) {
	t.Helper()
	ctx := admission.NewContextWithRequest(context.Background(),
		admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create}})
	d := md.DeepCopy()
	wh := &coreadmission.MachineDeployment{}
	if err := wh.Default(ctx, d); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, md) {
		t.Errorf("CAPI's defaulting webhook changes the MachineDeployment builder's object:\n got %+v\nwant %+v", md.Spec, d.Spec)
	}
	if _, err := wh.ValidateCreate(ctx, md); err != nil {
		t.Errorf("CAPI's validating webhook rejects the MachineDeployment: %v", err)
	}
}

// checkMachineWebhookDefaults runs CAPI's Machine defaulting webhook on
// copies of the Machines CAPI made: with no webhooks installed, they must
// already be as the webhook would leave them.
func checkMachineWebhookDefaults(t *testing.T, machines []clusterv1.Machine) {
	t.Helper()
	for _, m := range machines {
		d := m.DeepCopy()
		if err := (&coreadmission.Machine{}).Default(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.Spec, m.Spec) || !reflect.DeepEqual(d.Labels, m.Labels) {
			t.Errorf("CAPI's Machine defaulting webhook would change machine %s:\n got %+v\nwant %+v", m.Name, m.Spec, d.Spec)
		}
	}
}

func ownerKind(o *unstructured.Unstructured) string {
	for _, r := range o.GetOwnerReferences() {
		if ptr.Deref(r.Controller, false) {
			return r.Kind
		}
	}
	return ""
}

func ownerName(o *unstructured.Unstructured) string {
	for _, r := range o.GetOwnerReferences() {
		if ptr.Deref(r.Controller, false) {
			return r.Name
		}
	}
	return ""
}

// machineStates summarizes Machines: name, phase, Ready condition.
func machineStates(ms []clusterv1.Machine) string {
	var out []string
	for _, m := range ms {
		ready := "?"
		if c := conditions.Get(&m, clusterv1.ReadyCondition); c != nil {
			ready = string(c.Status)
			if c.Message != "" {
				ready += " (" + strings.ReplaceAll(c.Message, "\n", "; ") + ")"
			}
		}
		out = append(out, fmt.Sprintf("%s %s ready=%s", m.Name, m.Status.Phase, ready))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
