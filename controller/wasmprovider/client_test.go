package wasmprovider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The REST client speaks to the cluster-scoped wasmproviders resource and
// writes status through the status subresource.
func TestRESTClient(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		wp := wasmprovv1alpha1.WasmProvider{TypeMeta: metav1.TypeMeta{APIVersion: "wasmprov.io/v1alpha1", Kind: "WasmProvider"},
			ObjectMeta: metav1.ObjectMeta{Name: "fake", ResourceVersion: "7"},
			Spec:       wasmprovv1alpha1.WasmProviderSpec{CloudProvider: "fake"}}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/apis/wasmprov.io/v1alpha1/wasmproviders":
			json.NewEncoder(w).Encode(wasmprovv1alpha1.WasmProviderList{TypeMeta: metav1.TypeMeta{APIVersion: "wasmprov.io/v1alpha1", Kind: "WasmProviderList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []wasmprovv1alpha1.WasmProvider{wp}})
		case r.Method == http.MethodGet && r.URL.Path == "/apis/wasmprov.io/v1alpha1/wasmproviders/fake":
			json.NewEncoder(w).Encode(wp)
		case r.Method == http.MethodPut && r.URL.Path == "/apis/wasmprov.io/v1alpha1/wasmproviders/fake/status":
			b, _ := io.ReadAll(r.Body)
			var in wasmprovv1alpha1.WasmProvider
			if err := json.Unmarshal(b, &in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			in.ResourceVersion = "8"
			json.NewEncoder(w).Encode(in)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := wasmprovider.NewRESTClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := c.List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Spec.CloudProvider != "fake" {
		t.Fatalf("List = %+v, %v", l, err)
	}
	wp, err := c.Get(ctx, "fake")
	if err != nil || wp.Name != "fake" {
		t.Fatalf("Get = %+v, %v", wp, err)
	}
	wp.Status.ObservedGeneration = 3
	out, err := c.UpdateStatus(ctx, wp)
	if err != nil || out.ResourceVersion != "8" || out.Status.ObservedGeneration != 3 {
		t.Fatalf("UpdateStatus = %+v, %v", out, err)
	}
	// As client-go's typed clients: the answer is a new object; the one
	// given is left as it was (the Machine updater relies on it).
	if wp.ResourceVersion != "7" {
		t.Fatalf("UpdateStatus changed its argument: resourceVersion %q", wp.ResourceVersion)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"GET /apis/wasmprov.io/v1alpha1/wasmproviders", "GET /apis/wasmprov.io/v1alpha1/wasmproviders/fake", "PUT /apis/wasmprov.io/v1alpha1/wasmproviders/fake/status"}
	if len(seen) != len(want) {
		t.Fatalf("requests %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("requests %q, want %q", seen, want)
		}
	}
}
