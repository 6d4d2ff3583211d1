package hosthttp_test

import (
	"net/http"
	"testing"

	"github.com/wasmprov/wasmprov/guests/go/hosthttp"
)

// Linked into a host process (a provider run in-process by
// runtime/native), hosthttp leaves the process's default transport alone:
// only a wasip1 guest, which has no sockets, gets Transport as its default.
func TestDefaultTransportUntouchedOutsideWasip1(t *testing.T) {
	if http.DefaultTransport == hosthttp.Transport {
		t.Fatal("hosthttp replaced the host process's http.DefaultTransport")
	}
	if _, ok := http.DefaultTransport.(*http.Transport); !ok {
		t.Fatalf("http.DefaultTransport is a %T, want net/http's *http.Transport", http.DefaultTransport)
	}
}
