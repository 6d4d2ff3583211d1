package wasmprovider_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A module whose metadata needs a newer host is refused before it is
// compiled, with reason Incompatible and the version it asks for.
func TestIncompatibleModule(t *testing.T) {
	wasm, err := metadata.Write(version(t, "inc"), &metadata.Metadata{Name: "fake", MinHostVersion: "99.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{leader: true})
	e.configMap(t, "kube-system", "modules", "fake.wasm", wasm)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(wasm)), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonIncompatible))
	})
	if m := condMessage(wp, wasmprovv1alpha1.ConditionReady); !strings.Contains(m, "99.0.0") {
		t.Fatalf("Ready message %q does not name the host version the module needs", m)
	}
	if got := e.registryServes("fake"); got != "" {
		t.Fatalf("registry serves %q for an incompatible module", got)
	}
}

// A module that traps in every call loads but fails the smoke call: reason
// SmokeTestFailed, and a version serving before keeps serving.
func TestSmokeTestFailed(t *testing.T) {
	trap, err := os.ReadFile(filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "trap_all.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	good := version(t, "good")
	e := newEnv(t, envOpts{leader: true})
	e.configMap(t, "kube-system", "modules", "good.wasm", good)
	e.configMap(t, "kube-system", "traps", "trap.wasm", trap)
	e.wps.create(cmWP("fake", "fake", "good.wasm", sum(good)), time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return serving(wp, "sha256:"+sum(good))
	})
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) {
		s.Source.ConfigMap.Name, s.Source.ConfigMap.Key, s.Source.ConfigMap.SHA256 = "traps", "trap.wasm", sum(trap)
	})
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPreviousServing))
	})
	if rej := wp.Status.LastRejected; rej == nil || rej.Reason != wasmprovv1alpha1.ReasonSmokeTestFailed || rej.Digest != "sha256:"+sum(trap) {
		t.Fatalf("lastRejected = %+v, want SmokeTestFailed for the trapping module", rej)
	}
	if got := e.registryServes("fake"); got != sum(good) && got != "sha256:"+sum(good) {
		t.Fatalf("registry serves %q, want the good version", got)
	}
}

// A WasmProvider claiming a name the registry serves from a directory
// loses the claim: reason Conflict, and the directory's module keeps
// serving.
func TestNameServedFromDirectory(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	dir := t.TempDir()
	fromDir := version(t, "dir")
	if err := os.WriteFile(filepath.Join(dir, "fake.wasm"), fromDir, 0o644); err != nil {
		t.Fatal(err)
	}
	e.precompile(t, fromDir)
	if err := e.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	other := version(t, "cm")
	e.configMap(t, "kube-system", "modules", "fake.wasm", other)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(other)), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonConflict)
	})
	if m := condMessage(wp, wasmprovv1alpha1.ConditionReady); !strings.Contains(m, registry.ErrDuplicateProvider.Error()) {
		t.Fatalf("Ready message %q does not say the name is taken", m)
	}
	if got := e.registryServes("fake"); got != "sha256:"+sum(fromDir) {
		t.Fatalf("registry serves %q, want the directory's module", got)
	}
	e.waitEvent(t, "fake", "Warning Conflict:")
}

// What a hostile module controls of a refusal — here the function names
// of its name section, which the engine's trap message quotes in its
// stack trace — reaches status and Events without control characters:
// `kubectl describe` prints them as they are.
func TestGuestTextInStatusIsPrintable(t *testing.T) {
	trap, err := os.ReadFile(filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "trap_all.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	const evil = "\x1b[2J\x1b]0;owned\x07evil"
	var names []byte
	names = appendLEB(names, 10)
	for idx := uint64(1); idx <= 10; idx++ {
		names = appendLEB(names, idx)
		names = appendLEB(names, uint64(len(evil)))
		names = append(names, evil...)
	}
	sub := append([]byte{1}, appendLEB(nil, uint64(len(names)))...)
	hostile := withCustomSection(trap, "name", append(sub, names...))
	e := newEnv(t, envOpts{leader: true})
	e.configMap(t, "kube-system", "modules", "hostile.wasm", hostile)
	e.wps.create(cmWP("fake", "fake", "hostile.wasm", sum(hostile)), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonSmokeTestFailed)
	})
	e.waitEvent(t, "fake", "Warning Rejected:")
	texts := []string{wp.Status.LastRejected.Message}
	for _, c := range wp.Status.Conditions {
		texts = append(texts, c.Message)
	}
	texts = append(texts, e.events(t, "fake")...)
	sawName := false
	for _, s := range texts {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("control characters reach status or Events: %q", s)
		}
		sawName = sawName || strings.Contains(s, "evil")
	}
	if !sawName {
		t.Logf("the trap message quotes no function name (nothing hostile to check): %q", texts)
	}
}
