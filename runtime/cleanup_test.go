package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// IN_PROGRESS (abi/SPEC.md §4) is Cleanup's "not finished yet": a result,
// not an error, but only from Delete of a module that said it would send
// it.

func TestCleanupInProgressFromWasm(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	inProgress := map[string][]byte{abi.MethodDelete.Export(): {opI32Const, byte(abi.StatusInProgress)}}
	m := newMachine("worker-1", "u-1", map[string]any{})

	declared, err := rt.LoadBytes(ctx, "async", providerModule(uint64(abi.CapAsyncDelete), inProgress).bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !declared.Granted().Has(abi.CapAsyncDelete) {
		t.Fatalf("async_delete not granted: %v", declared.Granted().Names())
	}
	for i := range 3 {
		var done bool
		d := discarded(declared, func() { done, err = declared.Cleanup(ctx, m, nil) })
		if err != nil || done {
			t.Fatalf("call %d: Cleanup = %v, %v; want false, nil", i, done, err)
		}
		if d != 0 {
			t.Fatalf("call %d: an IN_PROGRESS answer discarded the instance", i)
		}
	}
	// Delete, the module's own answer, has no "not finished": a retriable error.
	err = declared.Delete(ctx, m, nil)
	expectCallError(t, err, runtime.ClassTransient, runtime.ErrDeletionInProgress)

	// Without the bit, 5 is a lie about the protocol, not progress.
	undeclared, err := rt.LoadBytes(ctx, "sync", providerModule(0, inProgress).bytes())
	if err != nil {
		t.Fatal(err)
	}
	var done bool
	d := discarded(undeclared, func() { done, err = undeclared.Cleanup(ctx, m, nil) })
	expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "does not declare the async_delete capability")
	if done || d != 1 {
		t.Errorf("undeclared IN_PROGRESS: done=%v discarded=%d, want false and 1", done, d)
	}
}

func TestAsyncDeleteIsGrantedDespitePolicy(t *testing.T) {
	// A policy lists what a module may use; async_delete is how it speaks,
	// so a policy granting nothing still grants it.
	rt := newRuntime(t)
	m := providerModule(uint64(abi.CapAsyncDelete|abi.CapHTTP), nil)
	p, err := rt.LoadBytes(context.Background(), "granted", m.bytes(), runtime.WithPolicy(runtime.Policy{Capabilities: []string{}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Granted(); got != abi.CapAsyncDelete {
		t.Errorf("granted %v, want only async_delete", got.Names())
	}
}

// stagedDelete is a native provider whose Delete reports IN_PROGRESS
// until it has been called `after` times, with a message and retry hint.
func stagedDelete(after int, calls *int) runtime.NativeFunc {
	return func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		if m != abi.MethodDelete {
			return abi.StatusOK
		}
		*calls++
		switch {
		case *calls < after:
			h.SetError("", "server 7 is being deleted", 1500)
			return abi.StatusInProgress
		case *calls == after:
			return abi.StatusOK
		}
		h.SetError("", "gone", 0)
		return abi.StatusNotFound
	}
}

func TestCleanupAcrossCalls(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	var calls int
	p, err := rt.LoadFunc("staged", abi.CapAsyncDelete, stagedDelete(3, &calls))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("worker-1", "u-1", map[string]any{})
	var got []bool
	for range 3 {
		done, err := p.Cleanup(ctx, m, nil)
		if err != nil {
			t.Fatalf("Cleanup: %v", err)
		}
		got = append(got, done)
	}
	// false, false, then OK: done.
	if want := []bool{false, false, true}; !slices.Equal(got, want) {
		t.Errorf("Cleanup answered %v, want %v", got, want)
	}
	// NOT_FOUND from Delete (the SPEC asks for OK): the instance is
	// already gone, so Cleanup is done; Delete keeps the guest's answer
	// for a checker.
	if done, err := p.Cleanup(ctx, m, nil); !done || err != nil {
		t.Errorf("Cleanup after the instance is gone = %v, %v; want done", done, err)
	}
	if err := p.Delete(ctx, m, nil); !errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Errorf("Delete after the instance is gone = %v; want ErrInstanceNotFound", err)
	}

	// The note and hint reach a caller that asks for them.
	calls = 0
	var note string
	var hint time.Duration
	if done, err := p.Cleanup(ctx, m, &provider.Data{Progress: func(n string, r time.Duration) { note, hint = n, r }}); done || err != nil {
		t.Fatalf("Cleanup = %v, %v", done, err)
	}
	if note != "server 7 is being deleted" || hint != 1500*time.Millisecond {
		t.Errorf("Progress got %q, %v", note, hint)
	}

	// Delete keeps the guest's note and retry hint.
	calls = 0
	err = p.Delete(ctx, m, nil)
	if !errors.Is(err, runtime.ErrDeletionInProgress) {
		t.Fatalf("Delete: %v, want ErrDeletionInProgress", err)
	}
	var retry *cloudprovidererrors.RetryableError
	if !errors.As(err, &retry) || retry.RetryAfter != 1500*time.Millisecond {
		t.Errorf("Delete: %v, want a retry hint of 1.5s", err)
	}
	if want := `provider "staged": Delete: deletion in progress: server 7 is being deleted`; !strings.Contains(err.Error(), want) {
		t.Errorf("Delete: %q lacks the provider and the guest's note %q", err, want)
	}
}

func TestCallObserverSeesProgressAsSuccess(t *testing.T) {
	var observed []error
	rt := newRuntime(t, runtime.WithCallObserver(func(_ string, m abi.Method, _ time.Duration, err error) {
		if m == abi.MethodDelete {
			observed = append(observed, err)
		}
	}))
	var calls int
	p, err := rt.LoadFunc("staged", abi.CapAsyncDelete, stagedDelete(2, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if done, err := p.Cleanup(context.Background(), newMachine("w", "u", map[string]any{}), nil); done || err != nil {
		t.Fatalf("Cleanup = %v, %v", done, err)
	}
	if len(observed) != 1 || observed[0] != nil {
		t.Errorf("observer saw %v, want one nil: progress is not a failed call", observed)
	}
}

// TestDataFunctionsOnlyInCreateAndDelete: the current contract hands
// ProviderData to Get as well, and provider.Data can be given to any method;
// machine_update and pv_list stay Create and Delete only (SPEC §6.3), as
// the seed interface had it, whatever the caller passes.
func TestDataFunctionsOnlyInCreateAndDelete(t *testing.T) {
	ctx := context.Background()
	updates, lists := 0, 0
	data := &provider.Data{
		Update: func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			updates++
			modify(m)
			return m, nil
		},
		ListPersistentVolumes: func(context.Context, labels.Selector) ([]corev1.PersistentVolume, error) {
			lists++
			return nil, nil
		},
	}
	got := map[abi.Method]string{}
	p, err := newRuntime(t).LoadFunc("data", abi.CapMachineUpdate|abi.CapPVList, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		_, uerr := h.Call(abi.ImportMachineUpdate, []byte(`{"addFinalizers":["x"]}`))
		_, lerr := h.Call(abi.ImportPVList, []byte(`{}`))
		got[m] = fmt.Sprint(errnoOf(uerr), " ", errnoOf(lerr))
		if m == abi.MethodGet || m == abi.MethodCreate {
			h.Output([]byte(`{"name":"w","id":"1","status":"running"}`))
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("w", "u", map[string]any{})
	c := p
	if _, err := c.Get(ctx, m, data); err != nil {
		t.Fatal(err)
	}
	if err := c.MigrateUID(ctx, m, "u2", data); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, m, data, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cleanup(ctx, m, data); err != nil {
		t.Fatal(err)
	}
	want := map[abi.Method]string{
		abi.MethodGet:        "unavailable unavailable",
		abi.MethodMigrateUID: "unavailable unavailable",
		abi.MethodCreate:     "ok ok",
		abi.MethodDelete:     "ok ok",
	}
	for meth, w := range want {
		if got[meth] != w {
			t.Errorf("%s: machine_update, pv_list = %s, want %s", meth, got[meth], w)
		}
	}
	if updates != 2 || lists != 2 {
		t.Errorf("backends reached %d updates, %d lists; want 2 each (Create and Delete)", updates, lists)
	}
}

func errnoOf(err error) string {
	var he *runtime.HostError
	if err == nil {
		return "ok"
	}
	if errors.As(err, &he) {
		return he.Errno.String()
	}
	return err.Error()
}

// TestCallObserverSeesRefusedResults: a result the host refuses after the
// guest returned OK is a failed call for the observer (and so for the
// metrics), like any other bad result.
func TestCallObserverSeesRefusedResults(t *testing.T) {
	observed := map[abi.Method]error{}
	rt := newRuntime(t, runtime.WithCallObserver(func(_ string, m abi.Method, _ time.Duration, err error) {
		observed[m] = err
	}))
	p, err := rt.LoadFunc("liar", 0, func(_ context.Context, h runtime.NativeHost, m abi.Method) abi.Status {
		switch m {
		case abi.MethodGet:
			h.Output([]byte(`{"name":"w","id":"1","status":"booting"}`))
		case abi.MethodSetMetricsForMachines:
			h.Output([]byte(`{"metrics":[{"name":"x","type":"counter","value":-1}]}`))
		}
		return abi.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, getErr := p.Get(ctx, newMachine("w", "u", map[string]any{}), nil)
	metricsErr := p.SetMetricsForMachines(ctx, machineList("w"), nil)
	for m, want := range map[abi.Method]error{abi.MethodGet: getErr, abi.MethodSetMetricsForMachines: metricsErr} {
		if want == nil || observed[m] != want || runtime.ErrorClass(observed[m]) != runtime.ClassBadResult {
			t.Errorf("%s: observed %v, want the bad result %v", m, observed[m], want)
		}
	}
}
