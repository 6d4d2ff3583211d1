package conformance

import (
	"context"
	"errors"
	"fmt"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/cloud/instance"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// Cleaning up: what a check created is deleted when the check ends,
// whatever its outcome; what could not be deleted, and what an earlier run
// left, is a Leftover, and a sweep deletes it.

// remove deletes m's instance, if it has one, as the controller would:
// Get first (a Create that failed may or may not have made one), then
// Delete until it is done. The journal forgets m once nothing is left.
func (t *T) remove(m *clusterv1alpha1.Machine) error {
	inst, _, err := t.get(m)
	switch {
	case isNotFound(err) || (err == nil && inst.Status() == instance.StatusDeleted):
		t.env.journal.forget(t.id, m.Name)
		return nil
	case err != nil && !t.env.stateful:
		return fmt.Errorf("Get: %w", err)
	}
	// A Get that failed may hide an instance: Delete decides.
	return t.deleteAll(m)
}

// cleanupFailed records why the cleanup of m failed: the run's report
// lists it as a leftover.
func (t *T) cleanupFailed(m *clusterv1alpha1.Machine, err error) {
	if err == nil {
		return
	}
	t.env.mu.Lock()
	defer t.env.mu.Unlock()
	if t.env.notDeleted == nil {
		t.env.notDeleted = map[string]error{}
	}
	t.env.notDeleted[journalKey(t.id, m.Name)] = err
}

// leftovers lists what the journal still holds after the checks: this
// run's Machines whose cleanup failed, with its error, and earlier runs'
// that this run did not meet again.
func (e *env) leftovers(earlier []journalEntry) []Leftover {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Leftover
	for _, en := range e.journal.entries() {
		err := e.notDeleted[journalKey(en.Check, en.Machine.Name)]
		if err == nil && !containsEntry(earlier, en) {
			err = errors.New("the check ended without deleting it")
		}
		out = append(out, leftoverOf(en, err))
	}
	return out
}

func containsEntry(list []journalEntry, en journalEntry) bool {
	for _, l := range list {
		if journalKey(l.Check, l.Machine.Name) == journalKey(en.Check, en.Machine.Name) {
			return true
		}
	}
	return false
}

// sweep removes the instance of every Machine of entries with the
// provider's own Get and Delete, and returns what it removed and what it
// could not.
func (e *env) sweep(ctx context.Context, entries []journalEntry) (swept, left []Leftover) {
	for _, en := range entries {
		t := &T{env: e, ctx: cassette.WithScope(ctx, "sweep"), id: en.Check, store: newMachineStore()}
		m := en.Machine.DeepCopy()
		m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: append([]byte(nil), e.defaulted...)}
		t.store.put(m)
		if err := t.remove(m); err != nil {
			left = append(left, leftoverOf(en, err))
			continue
		}
		swept = append(swept, leftoverOf(en, nil))
	}
	return swept, left
}
