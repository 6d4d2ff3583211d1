package wasmprovider_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	testwait "github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// wait bounds every wait for the reconciler: a cold build under -race
// compiles guests for minutes.
const wait = 5 * time.Minute

var wpGR = wasmprovv1alpha1.SchemeGroupVersion.WithResource(wasmprovv1alpha1.Resource).GroupResource()

// fakeWPs is an in-memory Client with the API server semantics the
// reconciler relies on: resourceVersion conflicts, a status subresource,
// and watches that replay what happened after the listed version.
type fakeWPs struct {
	mu       sync.Mutex
	rv       int
	objs     map[string]*wasmprovv1alpha1.WasmProvider
	history  []watch.Event
	watchers []*fakeWatch
	writes   int
	// conflictNext makes the next N UpdateStatus calls fail with a
	// conflict, as if another writer got in first (it did: the object's
	// resourceVersion moves on).
	conflictNext int
	conflicts    int
}

func newFakeWPs() *fakeWPs { return &fakeWPs{objs: map[string]*wasmprovv1alpha1.WasmProvider{}} }

// fakeWatch is a watch whose Stop may come at any time, also while
// events are sent.
type fakeWatch struct {
	ch   chan watch.Event
	done chan struct{}
	once sync.Once
}

func (w *fakeWatch) Stop()                          { w.once.Do(func() { close(w.done) }) }
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.ch }

func (w *fakeWatch) send(ev watch.Event) {
	select {
	case w.ch <- ev:
	case <-w.done:
	}
}

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch.
func (f *fakeWPs) IsWatchListSemanticsUnSupported() bool { return true }

func (f *fakeWPs) notify(t watch.EventType, wp *wasmprovv1alpha1.WasmProvider) {
	ev := watch.Event{Type: t, Object: wp.DeepCopy()}
	f.history = append(f.history, ev)
	for _, w := range f.watchers {
		w.send(watch.Event{Type: t, Object: wp.DeepCopy()})
	}
}

func (f *fakeWPs) bump(wp *wasmprovv1alpha1.WasmProvider) {
	f.rv++
	wp.ResourceVersion = strconv.Itoa(f.rv)
}

func (f *fakeWPs) Get(_ context.Context, name string) (*wasmprovv1alpha1.WasmProvider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wp, ok := f.objs[name]
	if !ok {
		return nil, apierrors.NewNotFound(wpGR, name)
	}
	return wp.DeepCopy(), nil
}

func (f *fakeWPs) List(_ context.Context, _ metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &wasmprovv1alpha1.WasmProviderList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(f.rv)}}
	for _, wp := range f.objs {
		l.Items = append(l.Items, *wp.DeepCopy())
	}
	return l, nil
}

func (f *fakeWPs) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	from, _ := strconv.Atoi(opts.ResourceVersion)
	w := &fakeWatch{ch: make(chan watch.Event, 1000), done: make(chan struct{})}
	for _, ev := range f.history {
		rv, _ := strconv.Atoi(ev.Object.(*wasmprovv1alpha1.WasmProvider).ResourceVersion)
		if rv > from {
			w.send(watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()})
		}
	}
	f.watchers = append(f.watchers, w)
	return w, nil
}

func (f *fakeWPs) UpdateStatus(_ context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.objs[wp.Name]
	if !ok {
		return nil, apierrors.NewNotFound(wpGR, wp.Name)
	}
	if f.conflictNext > 0 {
		f.conflictNext--
		f.conflicts++
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations["other-writer"] = strconv.Itoa(f.conflicts)
		f.bump(cur)
		f.notify(watch.Modified, cur)
	}
	if wp.ResourceVersion != cur.ResourceVersion {
		return nil, apierrors.NewConflict(wpGR, wp.Name, fmt.Errorf("resourceVersion %s, have %s", wp.ResourceVersion, cur.ResourceVersion))
	}
	cur.Status = *wp.Status.DeepCopy()
	f.bump(cur)
	f.writes++
	f.notify(watch.Modified, cur)
	return cur.DeepCopy(), nil
}

// create stores wp, created at created (claims are decided by creation
// time).
func (f *fakeWPs) create(wp *wasmprovv1alpha1.WasmProvider, created time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wp = wp.DeepCopy()
	wp.UID = types.UID("uid-" + wp.Name)
	wp.Generation = 1
	wp.CreationTimestamp = metav1.NewTime(created.Truncate(time.Second))
	f.bump(wp)
	f.objs[wp.Name] = wp
	f.notify(watch.Added, wp)
}

// updateSpec changes name's spec, bumping its generation.
func (f *fakeWPs) updateSpec(t *testing.T, name string, fn func(*wasmprovv1alpha1.WasmProviderSpec)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	wp, ok := f.objs[name]
	if !ok {
		t.Fatalf("no WasmProvider %q", name)
	}
	fn(&wp.Spec)
	wp.Generation++
	f.bump(wp)
	f.notify(watch.Modified, wp)
}

func (f *fakeWPs) delete(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wp, ok := f.objs[name]
	if !ok {
		return
	}
	delete(f.objs, name)
	f.bump(wp)
	f.notify(watch.Deleted, wp)
}

func (f *fakeWPs) get(t *testing.T, name string) *wasmprovv1alpha1.WasmProvider {
	t.Helper()
	wp, err := f.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return wp
}

func (f *fakeWPs) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *fakeWPs) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watchers {
		w.Stop()
	}
}

// env is a real runtime and registry, a real OCI registry on loopback, a
// fake clientset for Secrets, ConfigMaps and Events, the in-memory
// WasmProvider client, and a Reconciler over them.
type env struct {
	rt      *runtime.Runtime
	reg     *registry.Registry
	oci     *testregistry.Registry
	store   *oci.Store
	push    *oci.Client
	kube    *kubefake.Clientset
	wps     *fakeWPs
	prom    *prometheus.Registry
	rec     *wasmprovider.Reconciler
	leader  *leaderFlag
	clients sync.Map // dockerConfig content seen by NewOCIClient
}

type leaderFlag struct {
	mu sync.Mutex
	on bool
}

func (l *leaderFlag) get() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.on }
func (l *leaderFlag) set(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

// refuseVerify is in a verify block the test verifier refuses.
const refuseVerify = "refuse"

// testVerifier accepts a verify block unless it holds refuseVerify: the
// registry's Verifier hook, standing in for runtime/signature.
func testVerifier(_ context.Context, req registry.VerifyRequest) error {
	ref, dgst, doc := req.Ref, req.Digest, req.Verify
	if strings.Contains(string(doc), refuseVerify) {
		return fmt.Errorf("%s@%s: no signature satisfies the policy", ref, dgst)
	}
	return nil
}

type envOpts struct {
	leader  bool
	mutate  func(*wasmprovider.Options)
	noStart bool
}

func newEnv(t *testing.T, eo envOpts) *env {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	rt := testhost.NewRuntime(t, runtime.WithLogger(logger))
	store, err := oci.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{rt: rt, store: store, oci: testregistry.Start(t, testregistry.Options{}),
		kube: kubefake.New(), wps: newFakeWPs(), prom: prometheus.NewRegistry(), leader: &leaderFlag{on: eo.leader}}
	e.push, err = oci.New(oci.Options{PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json"), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.reg = registry.New(rt, registry.WithLogger(logger), registry.WithVerifier(testVerifier))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.reg.Close(ctx); err != nil {
			t.Errorf("closing registry: %v", err)
		}
	})
	configDir := t.TempDir()
	opts := wasmprovider.Options{
		Client: e.wps, Kube: e.kube, Loader: e.reg, Store: store,
		NewOCIClient: func(dc []byte) (*oci.Client, error) {
			file := filepath.Join(configDir, "none.json")
			if dc != nil {
				sum := sha256.Sum256(dc)
				file = filepath.Join(configDir, hex.EncodeToString(sum[:8])+".json")
				if err := os.WriteFile(file, dc, 0o600); err != nil {
					return nil, err
				}
				e.clients.Store(string(dc), true)
			}
			return oci.New(oci.Options{Store: store, PlainHTTP: true, DockerConfig: file, Timeout: 10 * time.Second})
		},
		IsLeader:        e.leader.get,
		PollInterval:    time.Second,
		RetryBackoff:    50 * time.Millisecond,
		MaxRetryBackoff: time.Second,
		Registerer:      e.prom,
		Logger:          logger,
	}
	if eo.mutate != nil {
		eo.mutate(&opts)
	}
	e.rec, err = wasmprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !eo.noStart {
		e.start(t)
	}
	return e
}

// start runs the reconciler until the test ends.
func (e *env) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.rec.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("Run did not return")
		}
		e.wps.stop()
	})
}

var _ wasmprovider.Pinner = (*oci.Store)(nil)

var (
	fakeOnce sync.Once
	fakeWasm []byte
)

// version is the fake guest with a custom section naming v: a distinct
// module (its own sha256, its own digest) that behaves the same.
func version(t *testing.T, v string) []byte {
	t.Helper()
	fakeOnce.Do(func() {
		b, err := os.ReadFile(testguest.Build(t, "examples/fake"))
		if err != nil {
			t.Fatal(err)
		}
		fakeWasm = b
	})
	if fakeWasm == nil {
		t.Fatal("the fake guest did not build")
	}
	return withCustomSection(fakeWasm, "wasmprov-test-version", []byte(v))
}

// withCustomSection appends a custom section (id 0) to a module; custom
// sections may come anywhere and are ignored by the engine.
func withCustomSection(wasm []byte, name string, payload []byte) []byte {
	var body []byte
	body = appendLEB(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out := append([]byte(nil), wasm...)
	out = append(out, 0)
	out = appendLEB(out, uint64(len(body)))
	return append(out, body...)
}

func appendLEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// precompile compiles wasm into the shared compilation cache, so the
// reconciler's load is not what a cold race build spends its time on.
func (e *env) precompile(t *testing.T, wasm []byte) {
	t.Helper()
	p, err := e.rt.LoadBytes(context.Background(), "precompile", wasm)
	if err != nil {
		t.Fatalf("precompiling: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// pushVersion pushes version v to providers/fake:v and returns the
// reference by digest and the digest.
func (e *env) pushVersion(t *testing.T, v string) (ref, dgst string) {
	t.Helper()
	wasm := version(t, v)
	e.precompile(t, wasm)
	d, err := e.push.Push(context.Background(), wasm, e.oci.Host+"/providers/fake:"+v)
	if err != nil {
		t.Fatal(err)
	}
	return e.oci.Host + "/providers/fake@" + d.String(), d.String()
}

func imageWP(name, cp, ref string) *wasmprovv1alpha1.WasmProvider {
	return &wasmprovv1alpha1.WasmProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: wasmprovv1alpha1.WasmProviderSpec{CloudProvider: cp,
			Source: wasmprovv1alpha1.Source{Image: &wasmprovv1alpha1.ImageSource{Ref: ref}}}}
}

func raw(s string) *k8sruntime.RawExtension { return &k8sruntime.RawExtension{Raw: []byte(s)} }

// waitWP waits until name's status satisfies ok, which returns what is
// wrong ("" when nothing is).
func (e *env) waitWP(t *testing.T, name string, ok func(*wasmprovv1alpha1.WasmProvider) string) *wasmprovv1alpha1.WasmProvider {
	t.Helper()
	var wp *wasmprovv1alpha1.WasmProvider
	testwait.For(t, "WasmProvider "+name, func() (bool, string) {
		var err error
		wp, err = e.wps.Get(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		why := ok(wp)
		st, _ := json.MarshalIndent(wp, "", "  ")
		return why == "", why + "\n" + string(st)
	})
	return wp
}

// cond checks a condition's status and reason.
func cond(wp *wasmprovv1alpha1.WasmProvider, typ string, status metav1.ConditionStatus, reason string) string {
	c := meta.FindStatusCondition(wp.Status.Conditions, typ)
	if c == nil {
		return typ + " is not set"
	}
	if c.Status != status || c.Reason != reason {
		return fmt.Sprintf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	if c.ObservedGeneration != wp.Generation {
		return fmt.Sprintf("%s observed generation %d, want %d", typ, c.ObservedGeneration, wp.Generation)
	}
	return ""
}

// all returns the first complaint of checks.
func all(checks ...string) string {
	for _, c := range checks {
		if c != "" {
			return c
		}
	}
	return ""
}

func serving(wp *wasmprovv1alpha1.WasmProvider, d string) string {
	if wp.Status.Serving == nil || wp.Status.Serving.Digest != d {
		return fmt.Sprintf("serving %+v, want %s", wp.Status.Serving, d)
	}
	if wp.Status.ObservedGeneration != wp.Generation {
		return fmt.Sprintf("observedGeneration %d, want %d", wp.Status.ObservedGeneration, wp.Generation)
	}
	return ""
}

// registryServes reports the digest serving cp in the registry ("" none).
func (e *env) registryServes(cp string) string {
	for _, s := range e.reg.Status() {
		if s.Name == cp && s.Serving {
			if s.ImageDigest != "" {
				return s.ImageDigest
			}
			return "sha256:" + s.SHA256
		}
	}
	return ""
}

func (e *env) waitRegistry(t *testing.T, cp, d string) {
	t.Helper()
	testwait.For(t, "the registry serving "+d+" for "+cp, func() (bool, string) {
		got := e.registryServes(cp)
		return got == d, "serves " + got
	})
}

// events lists the Events recorded on WasmProvider name as "reason: message".
func (e *env) events(t *testing.T, name string) []string {
	t.Helper()
	l, err := e.kube.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range l.Items {
		if ev.InvolvedObject.Name == name && ev.InvolvedObject.Kind == "WasmProvider" {
			out = append(out, ev.Type+" "+ev.Reason+": "+ev.Message)
		}
	}
	return out
}

// waitEvent waits for an Event on name whose "type reason: message" starts with prefix.
func (e *env) waitEvent(t *testing.T, name, prefix string) string {
	t.Helper()
	var found string
	testwait.For(t, fmt.Sprintf("Event %q on %s", prefix, name), func() (bool, string) {
		evs := e.events(t, name)
		for _, ev := range evs {
			if strings.HasPrefix(ev, prefix) {
				found = ev
				return true, ""
			}
		}
		return false, fmt.Sprintf("have %q", evs)
	})
	return found
}

// counter reads a counter of the reconciler's metrics.
func (e *env) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := e.prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (e *env) configMap(t *testing.T, ns, name, key string, b []byte) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, BinaryData: map[string][]byte{key: b}}
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ociClientWith is a client with the credentials of the Docker config file dc.
func (e *env) ociClientWith(t *testing.T, dc string) *oci.Client {
	t.Helper()
	c, err := oci.New(oci.Options{PlainHTTP: true, DockerConfig: dc, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pinRecorder forwards to the store and records each owner's last pin set.
type pinRecorder struct {
	store *oci.Store
	mu    sync.Mutex
	pins  map[string][]string
	calls int
}

func (p *pinRecorder) Pin(owner string, ds ...digest.Digest) {
	p.store.Pin(owner, ds...)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.pins == nil {
		p.pins = map[string][]string{}
	}
	var s []string
	for _, d := range ds {
		s = append(s, d.String())
	}
	p.pins[owner] = s
}

func (p *pinRecorder) get(owner string) ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.pins[owner]
	return s, ok
}

// waitReconciles waits until n reconciles with the given result label,
// each begun after the call, have finished. It assumes a single
// WasmProvider reconciles with that result: the reconciles of one
// WasmProvider run one at a time, so at most one is in flight at the call
// (and may be counted first), and n+1 more counted are n begun after it.
// Each one counted has also written its status and Events.
func (e *env) waitReconciles(t *testing.T, result string, n int) {
	t.Helper()
	labels := map[string]string{"result": result}
	want := e.counter(t, "wasmprov_wasmprovider_reconciles_total", labels) + float64(n+1)
	testwait.For(t, fmt.Sprintf("%d more %q reconciles", n, result), func() (bool, string) {
		got := e.counter(t, "wasmprov_wasmprovider_reconciles_total", labels)
		return got >= want, fmt.Sprintf("%v counted, want %v", got, want)
	})
}
