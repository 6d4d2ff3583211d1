package wasmprovider

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Reconciler's Prometheus counters.
type metrics struct {
	statusWrites prometheus.Counter
	reconciles   *prometheus.CounterVec
}

// Reconcile results, the values of wasmprov_wasmprovider_reconciles_total's
// result label.
const (
	resultOK       = "ok"       // the spec's version serves (or the loser's status is right)
	resultRefused  = "refused"  // the spec's version was refused; retried with backoff
	resultError    = "error"    // the reconcile itself failed (status write, API); retried
	resultDeleted  = "deleted"  // the WasmProvider is gone; its provider released
	resultConflict = "conflict" // another WasmProvider serves the cloud provider
)

func newMetrics() *metrics {
	return &metrics{
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wasmprov_wasmprovider_status_writes_total",
			Help: "WasmProvider status updates written to the API server.",
		}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmprov_wasmprovider_reconciles_total",
			Help: "WasmProvider reconciles, by result (ok, refused, conflict, deleted, error).",
		}, []string{"result"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.statusWrites, m.reconciles} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
