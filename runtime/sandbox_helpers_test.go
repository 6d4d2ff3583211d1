package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// testMachine is a small Machine for the fake guest and the fixtures.
func testMachine() *clusterv1alpha1.Machine {
	raw, _ := json.Marshal(map[string]any{"cloudProvider": "fake", "cloudProviderSpec": map[string]any{"passValidation": true}})
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-system", UID: "uid-1"}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: raw}
	return m
}

// logRecord is one captured slog record, attributes flattened to strings.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (r logRecord) String() string { return fmt.Sprintf("%s %q %v", r.Level, r.Msg, r.Attrs) }

// logCapture is a slog handler that keeps every record (Debug and up).
type logCapture struct {
	mu   *sync.Mutex
	recs *[]logRecord
	with []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: new(sync.Mutex), recs: new([]logRecord)}
}

func (c *logCapture) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range c.with {
		rec.Attrs[a.Key] = a.Value.Resolve().String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Resolve().String()
		return true
	})
	c.mu.Lock()
	*c.recs = append(*c.recs, rec)
	c.mu.Unlock()
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.with = append(append([]slog.Attr(nil), c.with...), as...)
	return &n
}

func (c *logCapture) WithGroup(string) slog.Handler { return c }

// records returns the records of provider whose message contains msg.
func (c *logCapture) records(provider, msg string) []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, r := range *c.recs {
		if r.Attrs["provider"] == provider && strings.Contains(r.Msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

// expectLog asserts that provider logged exactly n records at level whose
// message contains msg, and returns them.
func (c *logCapture) expectLog(t *testing.T, provider string, level slog.Level, msg string, n int) []logRecord {
	t.Helper()
	var got []logRecord
	for _, r := range c.records(provider, msg) {
		if r.Level == level {
			got = append(got, r)
		}
	}
	if len(got) != n {
		t.Errorf("want %d %s log record(s) %q from provider %q, got %d: %v", n, level, msg, provider, len(got), got)
	}
	return got
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
	if target != nil && !isErr(err, target) {
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

// fixture returns the bytes of a committed malicious .wasm fixture.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "malicious", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
