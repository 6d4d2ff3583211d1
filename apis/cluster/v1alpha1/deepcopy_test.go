package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/deepcopytest"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

func TestDeepCopyIndependence(t *testing.T) {
	checks := map[string]func(*testing.T) int{
		"Machine":                        deepcopytest.Check[v1alpha1.Machine],
		"MachineList":                    deepcopytest.Check[v1alpha1.MachineList],
		"MachineSpec":                    deepcopytest.Check[v1alpha1.MachineSpec],
		"MachineStatus":                  deepcopytest.Check[v1alpha1.MachineStatus],
		"MachineVersionInfo":             deepcopytest.Check[v1alpha1.MachineVersionInfo],
		"LastOperation":                  deepcopytest.Check[v1alpha1.LastOperation],
		"ProviderSpec":                   deepcopytest.Check[v1alpha1.ProviderSpec],
		"ProviderSpecSource":             deepcopytest.Check[v1alpha1.ProviderSpecSource],
		"MachineClassRef":                deepcopytest.Check[v1alpha1.MachineClassRef],
		"MachineSet":                     deepcopytest.Check[v1alpha1.MachineSet],
		"MachineSetList":                 deepcopytest.Check[v1alpha1.MachineSetList],
		"MachineSetSpec":                 deepcopytest.Check[v1alpha1.MachineSetSpec],
		"MachineSetStatus":               deepcopytest.Check[v1alpha1.MachineSetStatus],
		"MachineTemplateSpec":            deepcopytest.Check[v1alpha1.MachineTemplateSpec],
		"MachineDeployment":              deepcopytest.Check[v1alpha1.MachineDeployment],
		"MachineDeploymentList":          deepcopytest.Check[v1alpha1.MachineDeploymentList],
		"MachineDeploymentSpec":          deepcopytest.Check[v1alpha1.MachineDeploymentSpec],
		"MachineDeploymentStrategy":      deepcopytest.Check[v1alpha1.MachineDeploymentStrategy],
		"MachineRollingUpdateDeployment": deepcopytest.Check[v1alpha1.MachineRollingUpdateDeployment],
		"MachineDeploymentStatus":        deepcopytest.Check[v1alpha1.MachineDeploymentStatus],
		"MachineClass":                   deepcopytest.Check[v1alpha1.MachineClass],
		"MachineClassList":               deepcopytest.Check[v1alpha1.MachineClassList],
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) { check(t) })
	}
}

func TestDeepCopyObject(t *testing.T) {
	objs := []runtime.Object{
		&v1alpha1.Machine{}, &v1alpha1.MachineList{},
		&v1alpha1.MachineSet{}, &v1alpha1.MachineSetList{},
		&v1alpha1.MachineDeployment{}, &v1alpha1.MachineDeploymentList{},
		&v1alpha1.MachineClass{}, &v1alpha1.MachineClassList{},
	}
	for _, obj := range objs {
		deepcopytest.Fill(reflect.ValueOf(obj).Elem())
		cp := obj.DeepCopyObject()
		if reflect.TypeOf(cp) != reflect.TypeOf(obj) {
			t.Errorf("%T.DeepCopyObject returned %T", obj, cp)
			continue
		}
		if cp == obj || !reflect.DeepEqual(cp, obj) {
			t.Errorf("%T.DeepCopyObject: want an equal, distinct object", obj)
		}
	}
	var nilMachine *v1alpha1.Machine
	if got := nilMachine.DeepCopyObject(); got != nil {
		t.Errorf("nil Machine DeepCopyObject = %#v, want untyped nil", got)
	}
}

func TestDeepCopyRunningMachine(t *testing.T) {
	// A readable spot check on a realistic object, in addition to the
	// exhaustive reflective check above.
	y, err := os.ReadFile(filepath.Join("testdata", "running-machine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var orig v1alpha1.Machine
	if err := yaml.Unmarshal(y, &orig); err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(&orig)
	if err != nil {
		t.Fatal(err)
	}

	cp := orig.DeepCopy()
	if !apiequality.Semantic.DeepEqual(&orig, cp) {
		t.Fatal("copy differs from original before mutation")
	}
	cp.Labels["pool"] = "changed"
	cp.Finalizers[0] = "changed"
	cp.OwnerReferences[0].Name = "changed"
	*cp.OwnerReferences[0].Controller = false
	cp.ManagedFields[0].FieldsV1.Raw[0] = ' '
	*cp.Spec.ProviderID = "changed"
	cp.Spec.ProviderSpec.Value.Raw[1] = 'X'
	cp.Status.ProviderStatus.Raw[1] = 'X'
	cp.Status.NodeRef.Name = "changed"
	*cp.Status.ErrorReason = v1alpha1.CreateMachineError
	*cp.Status.ErrorMessage = "changed"
	cp.Status.LastUpdated.Time = cp.Status.LastUpdated.Add(time.Hour)
	cp.Status.Addresses[0].Address = "changed"
	cp.Status.Conditions[0].Reason = "changed"
	*cp.Status.LastOperation.State = "changed"
	*cp.Status.Phase = "changed"
	cp.DeletionTimestamp.Time = cp.DeletionTimestamp.Add(time.Hour)

	after, err := json.Marshal(&orig)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, before, after)
}
