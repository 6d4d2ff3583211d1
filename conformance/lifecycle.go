package conformance

import (
	"errors"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/runtime"
)

// The checks of an instance's life: Get, Create, Delete, MigrateUID,
// MachineMetricsLabels and concurrency. Failure messages name the Machine
// the provider received (describeMachine): under this suite, as under
// machine-controller, that is the Machine as the provider's earlier
// machine_update calls left it.

func checkGetUnknown(t *T) error {
	inst, got, err := t.get(t.machine(0))
	if err == nil {
		return failf("Get of a Machine that was never created returned %s; want instance-not-found (status 3)\nGet received: %s",
			describeInstance(inst), describeMachine(got))
	}
	if !isNotFound(err) {
		return failf("Get of a Machine that was never created returned a %s; want instance-not-found (status 3)\nGet received: %s",
			describe(err), describeMachine(got))
	}
	return nil
}

func checkCreateGet(t *T) error {
	m := t.machine(0)
	created, sent, err := t.create(m)
	if err != nil {
		return failf("Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
	}
	if created.ID() == "" {
		return failf("Create returned %s with an empty ID", describeInstance(created))
	}
	got, recv, err := t.get(m)
	if err != nil {
		return failf("Get after Create failed: %s; want %s\nGet received: %s", describe(err), describeInstance(created), describeMachine(recv))
	}
	if got.ID() != created.ID() {
		return failf("Create returned ID %q but Get returned ID %q\nGet received: %s", created.ID(), got.ID(), describeMachine(recv))
	}
	return nil
}

func checkCreateIdempotent(t *T) error {
	m := t.machine(0)
	first, sent, err := t.create(m)
	if err != nil {
		return failf("first Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
	}
	second, sent, err := t.create(m)
	switch {
	case err == nil && second.ID() != first.ID():
		return failf("second Create for the same Machine returned a new instance: first ID %q, second ID %q\nthe second Create received: %s",
			first.ID(), second.ID(), describeMachine(sent))
	case err != nil && sandboxFailure(err):
		return failf("second Create failed in the sandbox: %s", describe(err))
	case err != nil:
		t.notef("second Create returned %s (accepted: no second instance was reported)", describe(err))
	}
	got, recv, err := t.get(m)
	if err != nil {
		return failf("Get after two Creates failed: %s; want ID %q\nGet received: %s", describe(err), first.ID(), describeMachine(recv))
	}
	if got.ID() != first.ID() {
		return failf("Get after two Creates returned ID %q, the first Create returned %q\nGet received: %s", got.ID(), first.ID(), describeMachine(recv))
	}
	if !t.env.stateful {
		return nil
	}
	if err := t.deleteAll(m); err != nil {
		return failf("Delete after two Creates failed: %s\nDelete received: %s", describe(err), describeMachine(t.current(m)))
	}
	if left, recv, err := t.get(m); err == nil {
		return failf("after Delete, Get still finds %s: the second Create made another instance\nGet received: %s",
			describeInstance(left), describeMachine(recv))
	}
	return nil
}

func checkDeleteMissing(t *T) error {
	m := t.machine(0)
	ctx, cancel := t.callFor(m)
	defer cancel()
	err := t.env.p.Delete(ctx, t.current(m), createData(t.store))
	if errors.Is(err, runtime.ErrDeletionInProgress) {
		// An async_delete module may take more than one call even for
		// nothing; it must get there.
		err = t.deleteAll(m)
	}
	if err != nil {
		return failf("Delete of a Machine that was never created returned a %s; want success\nDelete received: %s",
			describe(err), describeMachine(t.current(m)))
	}
	return nil
}

func checkDeleteRemoves(t *T) error {
	m := t.machine(0)
	if _, sent, err := t.create(m); err != nil {
		return failf("Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
	}
	if err := t.deleteAll(m); err != nil {
		return failf("Delete failed: %s\nDelete received: %s", describe(err), describeMachine(t.current(m)))
	}
	inst, recv, err := t.get(m)
	switch {
	case err == nil && inst.Status() == instance.StatusDeleted:
		return nil
	case err == nil:
		return failf("after Delete returned OK, Get still finds %s; want not-found (or status deleted)\nGet received: %s",
			describeInstance(inst), describeMachine(recv))
	case !isNotFound(err):
		return failf("after Delete, Get returned a %s; want not-found\nGet received: %s", describe(err), describeMachine(recv))
	}
	return nil
}

// createAndMigrate creates m's instance and migrates it to a new UID as
// the controller does: MigrateUID, then the Machine replaced by one with
// the new UID and everything else kept. It returns the instance Create
// made and the Machine as it was before the migration.
func (t *T) createAndMigrate(m *clusterv1alpha1.Machine) (instance.Instance, *clusterv1alpha1.Machine, error) {
	created, sent, err := t.create(m)
	if err != nil {
		return nil, nil, failf("Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
	}
	newUID := uid(t.id + "/migrated")
	cur := t.current(m)
	ctx, cancel := t.callFor(m)
	defer cancel()
	if err := t.env.p.MigrateUID(ctx, cur.DeepCopy(), newUID, nil); err != nil {
		return nil, nil, failf("MigrateUID failed: %s\nMigrateUID received: %s", describe(err), describeMachine(cur))
	}
	migrated := cur.DeepCopy()
	migrated.UID = newUID
	t.store.put(migrated)
	t.env.journal.record(t.id, migrated)
	t.cleanupOldUID(cur)
	return created, cur, nil
}

func checkMigrateUID(t *T) error {
	m := t.machine(0)
	created, _, err := t.createAndMigrate(m)
	if err != nil {
		return err
	}
	got, recv, err := t.get(m)
	if err != nil {
		return failf("Get of the Machine with its new UID failed: %s; want %s\nGet received: %s",
			describe(err), describeInstance(created), describeMachine(recv))
	}
	if t.env.stateful && got.ID() != created.ID() {
		return failf("Get by the new UID returned ID %q, Create had returned %q\nGet received: %s", got.ID(), created.ID(), describeMachine(recv))
	}
	return nil
}

func checkMigrateForgetsOldUID(t *T) error {
	m := t.machine(0)
	created, before, err := t.createAndMigrate(m)
	if err != nil {
		return err
	}
	// The Machine as it was before the provider recorded anything on it,
	// with its old UID: only the UID can find an instance.
	old := t.rawMachine(0)
	old.Spec.ProviderSpec.Value.Raw = append([]byte(nil), t.env.defaulted...)
	ctx, cancel := t.callFor(old)
	defer cancel()
	inst, err := t.env.p.Get(ctx, old.DeepCopy(), nil)
	switch {
	case err == nil && inst != nil && inst.Status() != instance.StatusDeleted:
		return failf("after MigrateUID to %s, Get of a Machine with the old UID %s still finds %s (Create had returned ID %q): "+
			"the instance still carries the old UID (a tag or label MigrateUID added to but did not remove)",
			t.current(m).UID, before.UID, describeInstance(inst), created.ID())
	case err != nil && !isNotFound(err):
		return failf("after MigrateUID, Get of a Machine with the old UID returned a %s; want not-found\nGet received: %s", describe(err), describeMachine(old))
	}
	return nil
}

func checkMetricsSize(t *T) error {
	ctx, cancel := t.call()
	defer cancel()
	m := t.machine(0)
	labels, err := t.env.p.MachineMetricsLabels(ctx, m, nil)
	if err != nil {
		return failf("MachineMetricsLabels failed: %s", describe(err))
	}
	if labels["size"] == "" {
		return failf("MachineMetricsLabels returned %v, which has no non-empty \"size\" label", labels)
	}
	return nil
}

func checkConcurrency(t *T) error {
	n := t.env.cfg.Concurrency
	ms := make([]*clusterv1alpha1.Machine, n)
	for i := range ms {
		ms[i] = t.machine(i)
	}
	each := func(f func(i int) error) error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f(i)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	created := make([]instance.Instance, n)
	if err := each(func(i int) (err error) {
		created[i], _, err = t.create(ms[i])
		if err != nil {
			return failf("Create of %s failed: %s", ms[i].Name, describe(err))
		}
		return nil
	}); err != nil {
		return err
	}
	owner := map[string]string{}
	var errs []error
	for i, c := range created {
		if prev, ok := owner[c.ID()]; ok {
			errs = append(errs, failf("Machines %s and %s got the same instance ID %q", prev, ms[i].Name, c.ID()))
		}
		owner[c.ID()] = ms[i].Name
	}
	errs = append(errs, each(func(i int) error {
		got, recv, err := t.get(ms[i])
		if err != nil {
			return failf("Get of %s failed: %s\nGet received: %s", ms[i].Name, describe(err), describeMachine(recv))
		}
		if got.ID() != created[i].ID() {
			return failf("Get of %s returned ID %q (%s's), its Create returned %q", ms[i].Name, got.ID(), owner[got.ID()], created[i].ID())
		}
		return nil
	}))
	errs = append(errs, each(func(i int) error {
		if err := t.deleteAll(ms[i]); err != nil {
			return failf("Delete of %s failed: %s", ms[i].Name, describe(err))
		}
		return nil
	}))
	if t.env.stateful {
		errs = append(errs, each(func(i int) error {
			if inst, _, err := t.get(ms[i]); err == nil && inst.Status() != instance.StatusDeleted {
				return failf("after Delete, Get of %s still finds %s", ms[i].Name, describeInstance(inst))
			}
			return nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return failf("%v", err)
	}
	return nil
}
