//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// Shared by every test: one API server, the controller binary, the
// Hetzner provider module and a kubeconfig for a user that has exactly the
// RBAC of controller/deploy/rbac.yaml.
var (
	root        string
	adminCfg    *rest.Config
	kube        kubernetes.Interface
	machines    *controller.RESTMachineClient
	binary      string
	hetznerWasm []byte
	ctrlKubecfg string
	wazeroCache string
	verbose     = os.Getenv("E2E_VERBOSE") != ""
	// testEnv is the control plane, for the scale harness's restart of
	// kube-apiserver (scale_disrupt_test.go).
	testEnv *envtest.Environment
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	_, file, _, _ := goruntime.Caller(0)
	root = filepath.Join(filepath.Dir(file), "..")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "e2e: KUBEBUILDER_ASSETS is not set; run `make e2e`, which builds kube-apiserver and etcd with hack/kube-binaries.sh")
		return 1
	}
	tmp, err := os.MkdirTemp("", "wasmprov-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)

	start := time.Now()
	capiCRDs, err := capiCRDDir() // clusterapi_env_test.go
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "controller", "crd"), capiCRDs},
		ErrorIfCRDPathMissing: true,
	}
	// v1.37 refuses --advertise-address=127.0.0.1 with the default
	// endpoint reconciler (it would publish a loopback "kubernetes" Service).
	env.ControlPlane.GetAPIServer().Configure().Set("endpoint-reconciler-type", "none")
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting kube-apiserver and etcd:", err)
		return 1
	}
	testEnv = env
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping the control plane:", err)
		}
		// A kube-apiserver started again in its directory (the scale
		// harness's restart) leaves envtest thinking the directory is
		// not its own to remove; it is.
		if d := env.ControlPlane.APIServer.CertDir; d != "" {
			_ = os.RemoveAll(d)
		}
	}()
	fmt.Fprintf(os.Stderr, "e2e: kube-apiserver and etcd up in %v\n", time.Since(start).Round(time.Millisecond))
	adminCfg = cfg
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if machines, err = controller.NewRESTMachineClient(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if ctrlKubecfg, err = controllerUser(env, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: controller user:", err)
		return 1
	}

	start = time.Now()
	binary = filepath.Join(tmp, "wasmprov")
	buildArgs := []string{"-o", binary, "."}
	if os.Getenv("E2E_RACE") != "" { // the controller processes run with the race detector
		buildArgs = append([]string{"-race"}, buildArgs...)
	}
	if err := goBuild(filepath.Join(root, "cmd", "wasmprov"), nil, buildArgs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	wasm := filepath.Join(tmp, "hetzner.wasm")
	if err := goBuild(filepath.Join(root, "examples", "hetzner"),
		[]string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}, "-buildmode=c-shared", "-trimpath", "-o", wasm, "."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if hetznerWasm, err = os.ReadFile(wasm); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built wasmprov and hetzner.wasm in %v\n", time.Since(start).Round(time.Millisecond))
	wazeroCache = filepath.Join(tmp, "wazero")
	if c := os.Getenv("WASMPROV_TEST_CACHE"); c != "" {
		wazeroCache = filepath.Join(c, "wazero-e2e")
	}
	return m.Run()
}

func goBuild(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	// `make e2e` sets -mod=mod for this module; builds in the main module
	// must stay read-only so they never rewrite its go.mod.
	goflags := strings.Join(strings.Fields(strings.ReplaceAll(os.Getenv("GOFLAGS"), "-mod=mod", "")), " ")
	cmd.Env = append(append(os.Environ(), "GOFLAGS="+goflags), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v in %s: %v\n%s", args, dir, err, out)
	}
	return nil
}

// controllerUser creates a user bound to the ClusterRole and Role of
// controller/deploy/rbac.yaml and returns its kubeconfig file.
func controllerUser(env *envtest.Environment, dir string) (string, error) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(root, "controller", "deploy", "rbac.yaml"))
	if err != nil {
		return "", err
	}
	const user = "wasmprov-controller"
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return "", err
		}
		switch meta.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(doc, &cr); err != nil {
				return "", err
			}
			if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
				return "", err
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name + "-e2e"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
			if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				return "", err
			}
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(doc, &r); err != nil {
				return "", err
			}
			if _, err := kube.RbacV1().Roles(r.Namespace).Create(ctx, &r, metav1.CreateOptions{}); err != nil {
				return "", err
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name + "-e2e", Namespace: r.Namespace},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
			if _, err := kube.RbacV1().RoleBindings(r.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				return "", err
			}
		}
	}
	u, err := env.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		return "", err
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "controller.kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// world is one test's slice of the setup: a namespace, a simulator, a
// providers directory and the Lease the test's controllers compete for.
type world struct {
	t    *testing.T
	ns   string
	sim  *hcloudsim.Sim
	url  string
	dir  string
	hold *createHold
	// dirArgs are the provider directory flags startController passes
	// (default -providers dir); a test serving providers from
	// WasmProviders clears them and passes its own.
	dirArgs []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, hcloudsim.Options{RateLimit: 1_000_000, BootDuration: 300 * time.Millisecond, ActionDuration: 100 * time.Millisecond})
}

// newWorldWith is newWorld with a simulator of the given options (the
// scale harness's hostile cloud).
func newWorldWith(t *testing.T, opts hcloudsim.Options) *world {
	t.Helper()
	ctx := context.Background()
	ns := "e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns += "-" + rand.String(4)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sim := hcloudsim.New(opts)
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hetzner"},
		StringData: map[string]string{"token": sim.Token()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hold := &createHold{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: hold.wrap(sim), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { hold.release(); hold.unblock(); _ = srv.Close() })

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hetzner.yaml"), []byte("allowedHosts: [\"127.0.0.1:*\"]\nallowInsecureHTTP: true\ncallTimeout: 5m\n"))
	writeFile(t, filepath.Join(dir, "hetzner.wasm"), hetznerWasm)
	return &world{t: t, ns: ns, sim: sim, url: "http://" + ln.Addr().String() + "/v1", dir: dir, hold: hold,
		dirArgs: []string{"-providers", dir}}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // atomic, as a ConfigMap update would be
		t.Fatal(err)
	}
}

// createHold is the fault hook for "kill the controller mid-Create": the
// simulator creates the server, then the answer is held back until
// released, so the controller dies not knowing the server exists.
//
// It can also gate every server creation (block/unblock): requests wait
// before the simulator sees them, so provider calls stay in flight.
type createHold struct {
	mu       sync.Mutex
	armed    bool
	created  chan struct{}
	releaseC chan struct{}
	gate     chan struct{} // non-nil: POST /v1/servers waits for it to close
	waiting  int
}

func (h *createHold) block() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate = make(chan struct{})
}

func (h *createHold) unblock() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

// blocked is the number of server creations waiting at the gate.
func (h *createHold) blocked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

func (h *createHold) arm() (created <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed, h.created, h.releaseC = true, make(chan struct{}), make(chan struct{})
	return h.created
}

func (h *createHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.releaseC != nil {
		close(h.releaseC)
		h.releaseC = nil
	}
}

func (h *createHold) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		if gate := h.gate; gate != nil && r.Method == http.MethodPost && r.URL.Path == "/v1/servers" {
			h.waiting++
			h.mu.Unlock()
			// Read the body first: only then does net/http watch the
			// connection and cancel r.Context() when the client dies.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case <-gate:
			case <-r.Context().Done():
			}
			h.mu.Lock()
			h.waiting--
			if r.Context().Err() != nil {
				h.mu.Unlock()
				return
			}
		}
		hold := h.armed && r.Method == http.MethodPost && r.URL.Path == "/v1/servers"
		var created, release chan struct{}
		if hold {
			h.armed = false
			created, release = h.created, h.releaseC
		}
		h.mu.Unlock()
		if !hold {
			next.ServeHTTP(w, r)
			return
		}
		rec := &bufferedWriter{header: http.Header{}}
		next.ServeHTTP(rec, r) // the server now exists
		close(created)
		select {
		case <-release:
		case <-r.Context().Done():
			return // the client died waiting
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = 200
	}
	return b.body.Write(p)
}
func (b *bufferedWriter) WriteHeader(s int) { b.status = s }

// machine builds a Hetzner Machine pointing at the world's simulator;
// extra entries override cloudProviderSpec fields.
func (w *world) machine(name string, extra map[string]any) *clusterv1alpha1.Machine {
	spec := map[string]any{
		"token":      map[string]any{"secretKeyRef": map[string]any{"namespace": w.ns, "name": "hetzner", "key": "token"}},
		"serverType": "cx22",
		"location":   "fsn1",
		"endpoint":   w.url,
		"labels":     map[string]any{"cluster": "e2e"},
	}
	for k, v := range extra {
		spec[k] = v
	}
	raw, _ := json.Marshal(map[string]any{
		"cloudProvider": "hetzner", "cloudProviderSpec": spec,
		"operatingSystem": "ubuntu", "operatingSystemSpec": map[string]any{"distUpgradeOnBoot": false},
		"sshPublicKeys": []string{},
	})
	return &clusterv1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: clusterv1alpha1.MachineSpec{
			ProviderSpec: clusterv1alpha1.ProviderSpec{Value: &kruntime.RawExtension{Raw: raw}},
			Versions:     clusterv1alpha1.MachineVersionInfo{Kubelet: "1.37.2"},
		},
	}
}

func (w *world) create(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	w.t.Helper()
	out, err := machines.Create(context.Background(), m)
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

func (w *world) get(name string) (*clusterv1alpha1.Machine, bool) {
	w.t.Helper()
	m, err := machines.Get(context.Background(), w.ns, name)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return m, true
}

func (w *world) list() []clusterv1alpha1.Machine {
	w.t.Helper()
	l, err := machines.List(context.Background(), w.ns, metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return l.Items
}

// serversOf lists the simulator's servers labelled with the Machine's UID.
func (w *world) serversOf(m *clusterv1alpha1.Machine) []hcloudsim.ServerInfo {
	var out []hcloudsim.ServerInfo
	for _, s := range w.sim.Servers() {
		if s.Labels["machine-uid"] == string(m.UID) {
			out = append(out, s)
		}
	}
	return out
}

// provisioned reports whether the Machine has its providerID and addresses.
func provisioned(m *clusterv1alpha1.Machine) bool {
	return m != nil && m.Spec.ProviderID != nil && *m.Spec.ProviderID != "" && len(m.Status.Addresses) > 0
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// proc is one `wasmprov controller` process.
type proc struct {
	t       *testing.T
	id      string
	cmd     *exec.Cmd
	metrics string
	log     *lockedBuffer
	done    chan struct{}
	err     error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startController runs `wasmprov controller` for the world's namespace,
// competing for the world's Lease, as the restricted controller user.
func (w *world) startController(id string, extra ...string) *proc {
	w.t.Helper()
	addr := freePort(w.t)
	args := append([]string{"controller",
		"-kubeconfig", ctrlKubecfg}, w.dirArgs...)
	args = append(args,
		"-namespace", w.ns,
		"-workers", "4",
		"-poll-interval", "500ms",
		"-shutdown-timeout", "20s",
		"-leader-election-namespace", "kube-system",
		"-leader-election-name", w.ns,
		"-leader-election-id", id,
		"-lease-duration", "4s", "-renew-deadline", "3s", "-retry-period", "500ms",
		"-metrics-address", addr,
		"-cache", wazeroCache,
	)
	if verbose {
		args = append(args, "-log-level", "debug")
	}
	args = append(args, extra...)
	p := &proc{t: w.t, id: id, metrics: "http://" + addr + "/metrics", log: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG=")
	var out io.Writer = p.log
	if verbose {
		out = io.MultiWriter(p.log, prefixWriter(os.Stderr, id))
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() {
		p.kill()
		if w.t.Failed() {
			w.t.Logf("---- log of controller %s ----\n%s", id, tail(p.log.String(), 80))
		}
	})
	eventually(w.t, 60*time.Second, "controller "+id+" serving metrics", func() (bool, string) {
		select {
		case <-p.done:
			w.t.Fatalf("controller %s exited: %v\n%s", id, p.err, p.log.String())
		default:
		}
		resp, err := http.Get(p.metrics)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return p
}

func prefixWriter(w io.Writer, prefix string) io.Writer {
	pr, pw := io.Pipe()
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			fmt.Fprintf(w, "[%s] %s\n", prefix, s.Text())
		}
	}()
	return pw
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kill ends the process at once (SIGKILL): no cleanup, no Lease release.
func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop asks the process to shut down (SIGTERM) and waits.
func (p *proc) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.kill()
		return errors.New("did not stop in time")
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// metric returns the sum of the samples of a metric family whose labels
// include match.
func (p *proc) metric(name string, match map[string]string) float64 {
	p.t.Helper()
	resp, err := http.Get(p.metrics)
	if err != nil {
		p.t.Fatalf("scraping %s: %v", p.id, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	f, ok := families[name]
	if !ok {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		for k, v := range match {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		}
	}
	return sum
}

// leader returns the holder of the world's Lease.
func (w *world) leader() string {
	l, err := kube.CoordinationV1().Leases("kube-system").Get(context.Background(), w.ns, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
