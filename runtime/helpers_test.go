package runtime_test

// The runtime tests' shared helpers: the runtime, testdata and Machines they
// use, the fakes standing in for the API server and a cloud, and the
// assertions on call errors and the pool. Log capture is internal/testing/testlog's.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func newRuntime(t testing.TB, opts ...runtime.Option) *runtime.Runtime {
	t.Helper()
	return testhost.NewRuntime(t, opts...)
}

// readTestdata returns the bytes of testdata/path.
func readTestdata(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readFixture returns a committed ABI fixture (testdata/abi/name.wasm).
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	return readTestdata(t, filepath.Join("abi", name+".wasm"))
}

// fixture returns a committed malicious fixture (testdata/malicious/name.wasm).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return readTestdata(t, filepath.Join("malicious", name+".wasm"))
}

// readFile is os.ReadFile, for fuzz_test.go's fixture reader.
func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// newMachine returns a Machine whose providerSpec.value is config.
func newMachine(name string, uid types.UID, config any) *clusterv1alpha1.Machine {
	raw, err := json.Marshal(config)
	if err != nil {
		panic(err)
	}
	m := &clusterv1alpha1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cluster.k8s.io/v1alpha1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: uid, ResourceVersion: "1"},
	}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

// testMachine is the Machine m1/uid-1 that the fake guest validates.
func testMachine() *clusterv1alpha1.Machine {
	return newMachine("m1", "uid-1", map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": true}})
}

// expectCallError asserts err's class, that it wraps target (if not nil)
// and that its message contains every string in contains.
func expectCallError(t *testing.T, err error, class runtime.Class, target error, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %s error, got success", class)
	}
	if got := runtime.ErrorClass(err); got != class {
		t.Errorf("want class %q, got %q (%v)", class, got, err)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("want an error wrapping %v, got %v", target, err)
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("want %q in the error, got %v", s, err)
		}
	}
}

// expectPool asserts the provider's discarded and in-use instance counts.
func expectPool(t *testing.T, p *runtime.Provider, discarded int64) {
	t.Helper()
	st := p.PoolStats()
	live, inUse, d := st.Live, st.InUse, st.Discarded
	if d != discarded || inUse != 0 {
		t.Errorf("pool: want %d discarded and 0 in use, got discarded=%d inUse=%d live=%d", discarded, d, inUse, live)
	}
}

// machineStore keeps Machines like the API server does for the updater:
// resourceVersion bumps on every write, and an update from a stale copy is
// a conflict, which the updater resolves by re-applying the change to the
// current object — machine-controller's semantics.
type machineStore struct {
	mu       sync.Mutex
	machines map[string]*clusterv1alpha1.Machine
	writes   int
	// conflictOnce makes the next update hit a conflict first.
	conflictOnce bool
	conflicts    int
}

func newMachineStore(ms ...*clusterv1alpha1.Machine) *machineStore {
	s := &machineStore{machines: map[string]*clusterv1alpha1.Machine{}}
	for _, m := range ms {
		s.machines[m.Name] = m.DeepCopy()
	}
	return s
}

func (s *machineStore) get(name string) *clusterv1alpha1.Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.machines[name]; m != nil {
		return m.DeepCopy()
	}
	return nil
}

func (s *machineStore) update(m *clusterv1alpha1.Machine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.machines[m.Name]
	if cur == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: "cluster.k8s.io", Resource: "machines"}, m.Name)
	}
	if s.conflictOnce {
		s.conflictOnce = false
		s.conflicts++
		cur.Annotations = map[string]string{"touched-by": "someone-else"}
		bumpRV(cur)
	}
	if cur.ResourceVersion != m.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Group: "cluster.k8s.io", Resource: "machines"}, m.Name, fmt.Errorf("stale resourceVersion"))
	}
	next := m.DeepCopy()
	bumpRV(next)
	s.machines[m.Name] = next
	s.writes++
	return nil
}

func bumpRV(m *clusterv1alpha1.Machine) {
	var v int
	fmt.Sscan(m.ResourceVersion, &v)
	m.ResourceVersion = fmt.Sprint(v + 1)
}

// updater is a MachineUpdater over the store with conflict retries.
func (s *machineStore) updater() cloud.MachineUpdater {
	return func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		for attempt := 0; attempt < 5; attempt++ {
			cur := s.get(m.Name)
			if cur == nil {
				return nil, fmt.Errorf("machine %s not found", m.Name)
			}
			modify(cur)
			err := s.update(cur)
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			return s.get(m.Name), nil
		}
		return nil, fmt.Errorf("too many conflicts")
	}
}

// fakeCloud is the loopback API the hostcalls example talks to.
type fakeCloud struct {
	mu        sync.Mutex
	token     string
	next      int
	instances map[string]map[string]any // by uid
	requests  []string
	// throttle makes the next n requests answer 429.
	throttle int
	srv      *httptest.Server
}

func newFakeCloud(t testing.TB, token string) *fakeCloud {
	c := &fakeCloud{token: token, instances: map[string]map[string]any{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *fakeCloud) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next, c.instances, c.requests, c.throttle = 0, map[string]map[string]any{}, nil, 0
}

func (c *fakeCloud) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.instances)
}

func (c *fakeCloud) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r.Method+" "+r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	if c.throttle > 0 {
		c.throttle--
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+c.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/ping":
		w.Write([]byte(`{"ok":true}`))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/instances":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		uid, _ := req["uid"].(string)
		if inst, ok := c.instances[uid]; ok { // idempotent by UID
			json.NewEncoder(w).Encode(inst)
			return
		}
		c.next++
		inst := map[string]any{"id": fmt.Sprint(c.next), "name": req["name"], "uid": uid,
			"ip": fmt.Sprintf("10.0.0.%d", c.next), "status": "running", "volumes": req["volumes"]}
		c.instances[uid] = inst
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(inst)
	case len(parts) == 3 && parts[1] == "instances" && r.Method == http.MethodGet:
		if inst, ok := c.instances[parts[2]]; ok {
			json.NewEncoder(w).Encode(inst)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	case len(parts) == 3 && parts[1] == "instances" && r.Method == http.MethodDelete:
		if _, ok := c.instances[parts[2]]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		delete(c.instances, parts[2])
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 4 && parts[3] == "migrate" && r.Method == http.MethodPost:
		inst, ok := c.instances[parts[2]]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		delete(c.instances, parts[2])
		inst["uid"] = req["uid"]
		c.instances[req["uid"]] = inst
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusBadRequest)
	}
}

// host returns the server's host:port.
func (c *fakeCloud) host() string { return strings.TrimPrefix(c.srv.URL, "http://") }
