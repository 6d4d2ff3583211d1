// Package metrics exposes a wasmprov runtime and registry to Prometheus.
//
//	c := metrics.New()
//	rt, _ := runtime.New(runtime.WithCallObserver(c.ObserveCall))
//	reg := registry.New(rt)
//	c.SetRegistry(reg)
//	prometheus.MustRegister(c, c.GuestCollector(logger))
//
// Call metrics come from the runtime's call observer; pool, instance,
// reload and version metrics are read from the registry at scrape time.
// The GuestCollector exposes what the registry's providers last reported
// through SetMetricsForMachines, as wasmprov_guest_<provider>_<name>; it
// is a collector of its own because those families are the guests' and
// cannot be described up front.
package metrics

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// Metric names.
const (
	CallsTotal              = "wasmprov_provider_calls_total"
	CallErrorsTotal         = "wasmprov_provider_call_errors_total"
	CallDurationSeconds     = "wasmprov_provider_call_duration_seconds"
	CallRetriesTotal        = "wasmprov_provider_call_retries_total"
	PoolSize                = "wasmprov_provider_pool_size"
	PoolInstances           = "wasmprov_provider_pool_instances"
	PoolInUse               = "wasmprov_provider_pool_in_use"
	InstancesCreatedTotal   = "wasmprov_provider_instances_created_total"
	InstancesDiscardedTotal = "wasmprov_provider_instances_discarded_total"
	ReloadsTotal            = "wasmprov_provider_reloads_total"
	Draining                = "wasmprov_provider_draining_versions"
	Serving                 = "wasmprov_provider_serving"
	Info                    = "wasmprov_provider_info"
	Stale                   = "wasmprov_provider_stale"
	ImagePullsTotal         = "wasmprov_provider_image_pulls_total"
	ImagePullSeconds        = "wasmprov_provider_image_pull_seconds_total"
	VerificationsTotal      = "wasmprov_provider_image_verifications_total"
	VerificationSeconds     = "wasmprov_provider_image_verification_seconds_total"
	HTTPRateLimit           = "wasmprov_provider_http_rate_limit"
	HTTPThrottledTotal      = "wasmprov_provider_http_throttled_requests_total"
	HTTPThrottledSeconds    = "wasmprov_provider_http_throttled_seconds_total"
	HTTPTooManyTotal        = "wasmprov_provider_http_429_total"
	HTTPBackoffsTotal       = "wasmprov_provider_http_backoffs_total"
	HTTPDeadlineTotal       = "wasmprov_provider_http_deadline_refusals_total"
)

// DefaultBuckets suit provider calls: tens of microseconds for a local
// method, up to minutes for a cloud API that creates a machine.
var DefaultBuckets = []float64{.0001, .0005, .001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Collector is a prometheus.Collector for a runtime and its registry.
type Collector struct {
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	retries  *prometheus.CounterVec

	reg atomic.Pointer[registry.Registry]

	poolSize, instances, inUse, created, discarded, reloads, draining, serving, info   *prometheus.Desc
	stale, pulls, pullSeconds, verifications, verifySeconds                            *prometheus.Desc
	httpRate, httpThrottled, httpThrottledSeconds, http429, httpBackoffs, httpDeadline *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// Option configures New.
type Option func(*options)

type options struct{ buckets []float64 }

// WithBuckets sets the call latency histogram's buckets (seconds).
func WithBuckets(b []float64) Option { return func(o *options) { o.buckets = b } }

// New returns a Collector. Feed it calls with ObserveCall (install it with
// runtime.WithCallObserver) and give it the registry with SetRegistry.
func New(opts ...Option) *Collector {
	o := options{buckets: DefaultBuckets}
	for _, f := range opts {
		f(&o)
	}
	pm := []string{"provider", "method"}
	p := []string{"provider"}
	return &Collector{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CallsTotal,
			Help: "Provider method calls finished, by provider and method."}, pm),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CallErrorsTotal,
			Help: "Provider method calls that failed, by class: terminal, not-found, transient, trap, timeout, canceled, bad-result, other."},
			[]string{"provider", "method", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: CallDurationSeconds,
			Help: "Provider method call latency, including the wait for a free instance.", Buckets: o.buckets}, pm),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CallRetriesTotal,
			Help: "Calls that reached a version closed by a reload before they started and were sent to the new version (not failures)."}, pm),
		poolSize:  prometheus.NewDesc(PoolSize, "Instance cap of the serving version.", p, nil),
		instances: prometheus.NewDesc(PoolInstances, "Live instances, serving and draining versions.", p, nil),
		inUse:     prometheus.NewDesc(PoolInUse, "Instances running a call.", p, nil),
		created:   prometheus.NewDesc(InstancesCreatedTotal, "Instances created, over every version.", p, nil),
		discarded: prometheus.NewDesc(InstancesDiscardedTotal, "Instances discarded after a trap, timeout, panic or their call budget, over every version.", p, nil),
		reloads:   prometheus.NewDesc(ReloadsTotal, "Version loads (the first one included), by result: ok or failed (rejected; the previous version kept serving).", []string{"provider", "result"}, nil),
		draining:  prometheus.NewDesc(Draining, "Replaced or removed versions still finishing calls.", p, nil),
		serving:   prometheus.NewDesc(Serving, "1 if a version of the provider is serving, 0 if it was removed or never loaded.", p, nil),
		info: prometheus.NewDesc(Info, "The serving version: its module's sha256, where it came from and, from an image, the image as written and the manifest digest it resolved to.",
			[]string{"provider", "module_sha256", "source", "image", "manifest_digest"}, nil),
		stale: prometheus.NewDesc(Stale, "1 while the serving version is the last known good rather than what its image names now (the registry cannot be reached).", p, nil),
		pulls: prometheus.NewDesc(ImagePullsTotal, "Image tag resolutions and artifact pulls (from the store or the registry), by result: ok or failed.",
			[]string{"provider", "result"}, nil),
		pullSeconds: prometheus.NewDesc(ImagePullSeconds, "Time spent resolving and pulling images.", p, nil),
		verifications: prometheus.NewDesc(VerificationsTotal, "Signature verifications of pulled artifacts, by result: ok or failed.",
			[]string{"provider", "result"}, nil),
		verifySeconds: prometheus.NewDesc(VerificationSeconds, "Time spent verifying signatures.", p, nil),
		httpRate:      prometheus.NewDesc(HTTPRateLimit, "The provider's HTTP requests per second allowed by its policy (0: unpaced).", p, nil),
		httpThrottled: prometheus.NewDesc(HTTPThrottledTotal,
			"Outbound HTTP requests that waited for the provider's rate limit or a backoff the cloud asked for, over every version.", p, nil),
		httpThrottledSeconds: prometheus.NewDesc(HTTPThrottledSeconds, "Time outbound HTTP requests waited for the rate limit or a backoff.", p, nil),
		http429:              prometheus.NewDesc(HTTPTooManyTotal, "429 Too Many Requests answers the provider's requests got.", p, nil),
		httpBackoffs: prometheus.NewDesc(HTTPBackoffsTotal,
			"Answers that held every request of the provider (429, 503 with Retry-After, RateLimit-Remaining 0).", p, nil),
		httpDeadline: prometheus.NewDesc(HTTPDeadlineTotal, "Outbound HTTP requests not sent because their call's deadline came before the rate limit allowed them.", p, nil),
	}
}

// SetRegistry makes the collector report reg's providers.
func (c *Collector) SetRegistry(reg *registry.Registry) { c.reg.Store(reg) }

// ObserveCall is a runtime.CallObserver.
func (c *Collector) ObserveCall(provider string, method abi.Method, d time.Duration, err error) {
	m := method.String()
	if errors.Is(err, runtime.ErrProviderClosed) {
		// Nothing ran; a registry Handle sends the call to the new version,
		// which reports it again.
		c.retries.WithLabelValues(provider, m).Inc()
		return
	}
	c.calls.WithLabelValues(provider, m).Inc()
	c.duration.WithLabelValues(provider, m).Observe(d.Seconds())
	if err != nil {
		class := string(runtime.ErrorClass(err))
		if class == "" {
			class = "other"
		}
		c.errors.WithLabelValues(provider, m, class).Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.calls.Describe(ch)
	c.errors.Describe(ch)
	c.duration.Describe(ch)
	c.retries.Describe(ch)
	for _, d := range []*prometheus.Desc{c.poolSize, c.instances, c.inUse, c.created, c.discarded, c.reloads, c.draining, c.serving, c.info,
		c.stale, c.pulls, c.pullSeconds, c.verifications, c.verifySeconds,
		c.httpRate, c.httpThrottled, c.httpThrottledSeconds, c.http429, c.httpBackoffs, c.httpDeadline} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.calls.Collect(ch)
	c.errors.Collect(ch)
	c.duration.Collect(ch)
	c.retries.Collect(ch)
	reg := c.reg.Load()
	if reg == nil {
		return
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, s := range reg.Status() {
		n := s.Name
		ch <- prometheus.MustNewConstMetric(c.poolSize, gauge, float64(s.PoolSize), n)
		ch <- prometheus.MustNewConstMetric(c.instances, gauge, float64(s.Instances), n)
		ch <- prometheus.MustNewConstMetric(c.inUse, gauge, float64(s.InUse), n)
		ch <- prometheus.MustNewConstMetric(c.created, counter, float64(s.InstancesCreated), n)
		ch <- prometheus.MustNewConstMetric(c.discarded, counter, float64(s.InstancesDiscarded), n)
		ch <- prometheus.MustNewConstMetric(c.reloads, counter, float64(s.ReloadsOK), n, "ok")
		ch <- prometheus.MustNewConstMetric(c.reloads, counter, float64(s.ReloadsFailed), n, "failed")
		ch <- prometheus.MustNewConstMetric(c.draining, gauge, float64(s.Draining), n)
		serving, stale := 0.0, 0.0
		if s.Serving {
			serving = 1
			ch <- prometheus.MustNewConstMetric(c.info, gauge, 1, n, s.SHA256, s.Source, s.Image, s.ImageDigest)
		}
		if s.Stale {
			stale = 1
		}
		ch <- prometheus.MustNewConstMetric(c.serving, gauge, serving, n)
		ch <- prometheus.MustNewConstMetric(c.stale, gauge, stale, n)
		h := s.HTTP
		ch <- prometheus.MustNewConstMetric(c.httpRate, gauge, h.RequestsPerSecond, n)
		ch <- prometheus.MustNewConstMetric(c.httpThrottled, counter, float64(h.Waits), n)
		ch <- prometheus.MustNewConstMetric(c.httpThrottledSeconds, counter, h.Waited.Seconds(), n)
		ch <- prometheus.MustNewConstMetric(c.http429, counter, float64(h.TooManyRequests), n)
		ch <- prometheus.MustNewConstMetric(c.httpBackoffs, counter, float64(h.Backoffs), n)
		ch <- prometheus.MustNewConstMetric(c.httpDeadline, counter, float64(h.DeadlineExceeded), n)
		if s.Image != "" || s.PullsOK+s.PullsFailed > 0 {
			ch <- prometheus.MustNewConstMetric(c.pulls, counter, float64(s.PullsOK), n, "ok")
			ch <- prometheus.MustNewConstMetric(c.pulls, counter, float64(s.PullsFailed), n, "failed")
			ch <- prometheus.MustNewConstMetric(c.pullSeconds, counter, s.PullSeconds, n)
			ch <- prometheus.MustNewConstMetric(c.verifications, counter, float64(s.VerificationsOK), n, "ok")
			ch <- prometheus.MustNewConstMetric(c.verifications, counter, float64(s.VerificationsFailed), n, "failed")
			ch <- prometheus.MustNewConstMetric(c.verifySeconds, counter, s.VerifySeconds, n)
		}
	}
}
