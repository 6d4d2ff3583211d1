package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// How checks call a provider the way machine-controller does: every call
// gets the Machine as the store holds it, so what a provider wrote with
// machine_update is what its next call receives.

// noPVs lists the PersistentVolumes of every run: there are none.
func noPVs(context.Context, labels.Selector) ([]corev1.PersistentVolume, error) { return nil, nil }

// createData is what Create and Delete get: machine-controller's updater
// over the check's Machine store, and no PersistentVolumes.
func createData(s *machineStore) *provider.Data {
	return &provider.Data{Update: s.updater(), ListPersistentVolumes: noPVs}
}

const userdata = "#cloud-config\n# wasmprov conformance\n"

// errNoInstance stands for a Get or Create that reported success without
// an Instance.
var errNoInstance = errors.New("status OK without an Instance document (SPEC §4.1: Get and Create output an Instance)")

// create creates m and registers its deletion at the end of the check. It
// returns the Machine the provider received.
func (t *T) create(m *clusterv1alpha1.Machine) (instance.Instance, *clusterv1alpha1.Machine, error) {
	cur := t.current(m)
	// The controller's own write racing the call: the provider's first
	// machine_update conflicts and is re-applied to the fresh Machine.
	t.store.touch(m)
	t.env.journal.record(t.id, cur)
	ctx, cancel := t.callFor(m)
	defer cancel()
	inst, err := t.env.p.Create(ctx, cur.DeepCopy(), createData(t.store), userdata)
	if err == nil && inst == nil {
		err = errNoInstance
	}
	t.env.journal.record(t.id, t.current(m))
	id := ""
	if err == nil {
		id = inst.ID()
	}
	t.cleanupAfter(m, id)
	return inst, cur, err
}

// cleanupAfter registers the removal of m's instance when the check ends:
// after a Create that returned instance id, Get must still find it, then
// Delete until done and Get finds nothing; after a Create that failed (id
// ""), Get first, and Delete only if there is an instance.
func (t *T) cleanupAfter(m *clusterv1alpha1.Machine, id string) {
	t.defer_(func() {
		if id == "" {
			t.cleanupFailed(m, t.remove(m))
			return
		}
		if t.env.stateful {
			if inst, _, err := t.get(m); (err == nil && inst.ID() != id) || isNotFound(err) {
				// Delete finds what Get finds: the instance Create made is
				// out of the provider's reach, and the suite's.
				t.cleanupFailed(m, fmt.Errorf("Create returned instance %q, which Get no longer finds (it found %s, %s): "+
					"Delete cannot remove it, and it may be left in the cloud", id, describeInstance(inst), describe(err)))
				return
			}
		}
		err := t.deleteAll(m)
		if err == nil && t.env.stateful {
			// A Delete that reports success without deleting leaves an
			// instance nothing else will find: say so, and keep it.
			if inst, _, gerr := t.get(m); gerr == nil && inst.Status() != instance.StatusDeleted {
				err = fmt.Errorf("Delete returned OK, but Get still finds %s", describeInstance(inst))
				t.env.journal.record(t.id, t.current(m))
			}
		}
		t.cleanupFailed(m, err)
	})
}

// cleanupOldUID registers, after a MigrateUID of m away from old (the
// Machine as it was), the removal of whatever its old UID still finds:
// a migration that did not move the instance leaves it there.
func (t *T) cleanupOldUID(old *clusterv1alpha1.Machine) {
	t.defer_(func() {
		// Only the UID may find it: without what the provider recorded
		// on the Machine, a provider keyed by an annotation or providerID
		// finds nothing here (its instance moved with the Machine).
		old := old.DeepCopy()
		old.Annotations, old.Finalizers, old.Spec.ProviderID = nil, nil, nil
		sub := &T{env: t.env, ctx: t.ctx, id: t.id, store: newMachineStore()}
		sub.store.put(old)
		if err := sub.remove(old); err != nil {
			t.cleanupFailed(old, fmt.Errorf("by its old UID: %w", err))
		}
	})
}

// get calls Get with the stored version of m and returns the Machine it
// passed.
func (t *T) get(m *clusterv1alpha1.Machine) (instance.Instance, *clusterv1alpha1.Machine, error) {
	cur := t.current(m)
	ctx, cancel := t.callFor(m)
	defer cancel()
	inst, err := t.env.p.Get(ctx, cur.DeepCopy(), nil)
	if err == nil && inst == nil {
		err = errNoInstance
	}
	return inst, cur, err
}

// Delete's retry budget: calls that fail, and calls in all (a deletion
// reported in progress gets the larger budget, as a cloud may take a while).
const (
	maxDeleteErrors = 15
	maxDeleteCalls  = 30
)

// deleteAll calls Delete until it returns OK, as the controller does:
// ERROR means "in progress, call again", and so does IN_PROGRESS from a
// module declaring async_delete (runtime.ErrDeletionInProgress). A
// deletion that stays in progress for maxDeleteCalls calls is a failure
// of its own: it would keep the Machine's finalizer forever.
func (t *T) deleteAll(m *clusterv1alpha1.Machine) error {
	var err error
	failed, budget := 0, maxDeleteCalls
	if t.env.neverDeletes.Load() {
		budget = 1 // diagnosed already: do not spend another budget
	}
	calls := 0
	for calls < budget {
		calls++
		cur := t.current(m)
		t.store.touch(m)
		ctx, cancel := t.callFor(m)
		err = t.env.p.Delete(ctx, cur, createData(t.store))
		cancel()
		if err == nil {
			t.env.journal.forget(t.id, m.Name)
			return nil
		}
		if sandboxFailure(err) {
			return err
		}
		if ok, _, _ := cloudprovidererrors.IsTerminalError(err); ok || isNotFound(err) {
			return err
		}
		if !errors.Is(err, runtime.ErrDeletionInProgress) {
			if failed++; failed >= maxDeleteErrors {
				return err
			}
		}
		if t.env.replay == nil {
			time.Sleep(time.Duration(min(calls, 10)) * 20 * time.Millisecond)
		}
	}
	if errors.Is(err, runtime.ErrDeletionInProgress) {
		what := fmt.Sprintf("Delete stayed in progress for %d calls", calls)
		if budget < maxDeleteCalls {
			what = fmt.Sprintf("Delete stayed in progress, as an earlier deletion of this module did for %d calls (this one got %d)", maxDeleteCalls, calls)
		} else {
			t.env.neverDeletes.Store(true)
		}
		return fmt.Errorf("%s: a deletion that never finishes keeps the Machine's finalizer forever (machine-controller calls Delete until it is done); last answer: %w", what, err)
	}
	return err
}
