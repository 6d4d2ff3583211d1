package hostmodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// One call cannot make the host flood another system: past a data host
// function's cap for one call, the function answers TOO_LARGE without
// reaching its backend (the cloud's API, the Machine updater, the PV
// lister), and the host warns once. The next call starts again at zero.
func TestHostFunctionUsesPerCall(t *testing.T) {
	const max = 3
	var requests, updates, lists atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	defer srv.Close()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}})
	lister := countingPVLister{listerscorev1.NewPersistentVolumeLister(idx), &lists}
	httpReq, _ := json.Marshal(abi.HTTPRequest{Method: "GET", URL: srv.URL})

	for _, tc := range []struct {
		fn      string
		req     []byte
		backend *atomic.Int64 // nil: config_var of a plain value reaches nothing
	}{
		{abi.ImportHTTP, httpReq, &requests},
		{abi.ImportMachineUpdate, []byte(`{"annotations":{"a":"b"}}`), &updates},
		{abi.ImportPVList, []byte(`{}`), &lists},
		{abi.ImportConfigVar, configVarReq("string", `"plain"`, ""), nil},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			var logs bytes.Buffer
			env := &Env{
				Provider: "test",
				Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
				HTTP:     NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true}),
				Limits: Limits{MaxHTTPRequestsPerCall: max, MaxMachineUpdatesPerCall: max,
					MaxConfigVarsPerCall: max, MaxPVListsPerCall: max},
			}
			defer env.Close()
			newCall := func() *Call {
				c := testCall(t, env, abi.MethodCreate, `{}`)
				c.Spec = nil
				c.Machine = &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u"}}
				c.Data = &Data{
					ListPersistentVolumes: provider.FromLister(lister),
					Update: func(cur *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
						updates.Add(1)
						next := cur.DeepCopy()
						modify(next)
						return next, nil
					},
				}
				return c
			}
			before := int64(0)
			if tc.backend != nil {
				before = tc.backend.Load()
			}
			c := newCall()
			for i := range max + 2 {
				_, err := c.Invoke(tc.fn, tc.req)
				var e *Error
				tooLarge := errors.As(err, &e) && e.Errno == abi.ErrnoTooLarge
				if i < max && err != nil {
					t.Fatalf("use %d of %d: %v", i+1, max, err)
				}
				if i >= max && !tooLarge {
					t.Fatalf("use %d, past the cap of %d: %v, want TOO_LARGE", i+1, max, err)
				}
			}
			if tc.backend != nil {
				if got := tc.backend.Load() - before; got != max {
					t.Errorf("the backend saw %d uses, want %d", got, max)
				}
			}
			if n := strings.Count(logs.String(), "exceeded a host function's limit"); n != 1 {
				t.Errorf("want one warning, got %d:\n%s", n, logs.String())
			}
			if _, err := newCall().Invoke(tc.fn, tc.req); err != nil {
				t.Errorf("the next call's first use: %v", err)
			}
		})
	}
}

type countingPVLister struct {
	listerscorev1.PersistentVolumeLister
	n *atomic.Int64
}

func (l countingPVLister) List(s labels.Selector) ([]*corev1.PersistentVolume, error) {
	l.n.Add(1)
	return l.PersistentVolumeLister.List(s)
}
