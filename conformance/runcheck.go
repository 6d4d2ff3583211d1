// Running the checks: each with its handle T, and its outcome turned into
// a Result.

package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/provider"
)

// runChecks runs the selected checks, those marked last after the
// others, and returns a Result for every check, in Checks' order.
func (e *env) runChecks(ctx context.Context) []Result {
	cfg := e.cfg
	var deferred []int
	results := make([]Result, len(Checks))
	for i, c := range Checks {
		results[i] = Result{ID: c.ID, Title: c.Title, Level: c.Level}
		if !selected(cfg.Checks, c.ID) {
			results[i].Status, results[i].Message = Skip, "not selected"
			continue
		}
		if c.last {
			deferred = append(deferred, i)
			continue
		}
		results[i] = e.run(ctx, c)
	}
	for _, i := range deferred {
		results[i] = e.run(ctx, Checks[i])
	}
	return results
}

// skipError skips a check with a reason.
type skipError struct{ reason string }

func (s skipError) Error() string { return s.reason }

// failure fails a check with an explanation of what machine-controller
// would do wrong.
type failure struct {
	msg string
}

func (f *failure) Error() string { return f.msg }

func failf(format string, args ...any) error { return &failure{fmt.Sprintf(format, args...)} }

// run runs one check and turns its outcome into a Result.
func (e *env) run(ctx context.Context, c Check) (res Result) {
	res = Result{ID: c.ID, Title: c.Title, Level: c.Level}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if c.ID != "abi.module" && e.loadErr != nil {
		res.Status, res.Message = Skip, "the module did not load (see abi.module)"
		return res
	}
	if c.Stateful && !e.stateful {
		res.Status, res.Message = Skip, "needs a provider that keeps state; the profile is stateless"
		return res
	}
	if c.Faults && e.cfg.Profile != ProfileFaults {
		res.Status, res.Message = Skip, "injects transport faults: runs in the faults profile"
		return res
	}
	ctx = cassette.WithScope(ctx, c.ID)
	t := &T{env: e, ctx: ctx, id: c.ID, store: newMachineStore()}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("conformance suite bug: panic in check %s: %v", c.ID, r)
			}
		}()
		return c.run(t)
	}()
	t.cleanup()
	if n, conflicts := t.store.stats(); n > 0 {
		t.notef("the provider updated its Machines with machine_update %d× (%d× after a conflict, re-applied to the fresh Machine); each later call received the updated Machine", n, conflicts)
	}
	if e.replay != nil {
		if rerr := e.replay.Check(c.ID); rerr != nil {
			saw := "the check passed otherwise"
			if err != nil {
				saw = "the check saw: " + strings.SplitN(err.Error(), "\n", 2)[0]
			}
			err = failf("the provider's HTTP traffic differs from the cassette (re-record it if the change is intended); %s\n%v", saw, rerr)
		}
	}
	res.Notes = t.notes
	switch err := err.(type) {
	case nil:
		res.Status = Pass
	case skipError:
		res.Status, res.Message = Skip, err.reason
	default:
		res.Status, res.Message, res.Why = Fail, err.Error(), c.Why
		if c.Level == Should {
			res.Status = Warn
		}
	}
	return res
}

// T is the handle a check works with.
type T struct {
	env   *env
	ctx   context.Context
	id    string
	notes []string
	// store holds the check's Machines (see machineStore).
	store    *machineStore
	mu       sync.Mutex
	cleanups []func()
}

func (t *T) notef(format string, args ...any) {
	t.mu.Lock()
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *T) defer_(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

func (t *T) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// call returns a context for one provider call. Calls that get a spec
// without its Machine (AddDefaults, Validate, GetCloudConfig) are made for
// a Machine of machineNamespace, as a controller validating a Machine it
// read passes its namespace: config_var may read Secrets there.
func (t *T) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(provider.WithMachineNamespace(t.ctx, machineNamespace), t.env.cfg.CallTimeout)
}

// callFor returns a context for one call for Machine m: its HTTP traffic
// is recorded and replayed under the Machine's own cassette scope
// ("check/machine"), so that Machines driven concurrently never take each
// other's recorded answers for identical requests.
func (t *T) callFor(m *clusterv1alpha1.Machine) (context.Context, context.CancelFunc) {
	ctx := cassette.WithScope(t.ctx, t.id+"/"+m.Name)
	return context.WithTimeout(provider.WithMachineNamespace(ctx, machineNamespace), t.env.cfg.CallTimeout)
}
