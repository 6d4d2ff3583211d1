package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A guest's log attributes cannot set or shadow the keys the host writes:
// with slog's JSON handler a forged "provider" used to produce a second
// top-level "provider" key that most log pipelines read as the real one.
func TestLogGuestCannotForgeHostKeys(t *testing.T) {
	forged := []byte(`{"provider":"other-provider","method":"Delete","machine":"kube-system/victim","level":"ERROR","time":"2000-01-01T00:00:00Z","msg":"forged","server":"cx22"}`)
	for _, handler := range []string{"json", "text"} {
		t.Run(handler, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewJSONHandler(&buf, nil)
			if handler == "text" {
				h = slog.NewTextHandler(&buf, nil)
			}
			env := &Env{Logger: slog.New(h).With("provider", "hetzner")}
			c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapLog)
			c.Machine = &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "team-a"}}
			if err := c.Log(int32(slog.LevelInfo), []byte("creating server"), forged); err != nil {
				t.Fatal(err)
			}
			line := strings.TrimSpace(buf.String())
			if handler == "json" {
				// A duplicate key would decode silently; count the keys.
				dec := json.NewDecoder(strings.NewReader(line))
				keys := map[string]int{}
				if _, err := dec.Token(); err != nil {
					t.Fatal(err)
				}
				for dec.More() {
					k, _ := dec.Token()
					keys[k.(string)]++
					var v json.RawMessage
					if err := dec.Decode(&v); err != nil {
						t.Fatal(err)
					}
				}
				for _, k := range []string{"provider", "method", "machine", "level", "time", "msg"} {
					if keys[k] != 1 {
						t.Errorf("top-level key %q appears %d times: %s", k, keys[k], line)
					}
				}
				var rec struct {
					Provider, Method, Machine, Msg string
					Guest                          map[string]any `json:"guest"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Provider != "hetzner" || rec.Method != "Create" || rec.Machine != "team-a/m1" || rec.Msg != "creating server" {
					t.Errorf("host keys overwritten: %s", line)
				}
				if rec.Guest["provider"] != "other-provider" || rec.Guest["server"] != "cx22" {
					t.Errorf("guest attributes lost: %s", line)
				}
				return
			}
			for _, want := range []string{"provider=hetzner", "method=Create", "machine=team-a/m1", "guest.provider=other-provider", "guest.server=cx22"} {
				if !strings.Contains(line, want) {
					t.Errorf("want %q in %s", want, line)
				}
			}
			for _, bad := range []string{" provider=other-provider", " method=Delete", " machine=kube-system/victim"} {
				if strings.Contains(line, bad) {
					t.Errorf("forged %q in %s", bad, line)
				}
			}
		})
	}
}
