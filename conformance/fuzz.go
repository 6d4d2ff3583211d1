package conformance

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// fuzzer makes random but reproducible Machines.
type fuzzer struct {
	r    *rand.Rand
	spec json.RawMessage
}

var nameRunes = []rune("abcdefghijklmnopqrstuvwxyz0123456789-.ABCXYZ_ üß日本\"\\/\x00\n{}")

func (f *fuzzer) str(maxLen int) string {
	n := f.r.IntN(maxLen + 1)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(nameRunes[f.r.IntN(len(nameRunes))])
	}
	return b.String()
}

func (f *fuzzer) name() string {
	switch f.r.IntN(6) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("x", 64+f.r.IntN(300))
	case 2:
		return f.str(3)
	}
	return f.str(40)
}

// value returns random JSON of bounded depth.
func (f *fuzzer) value(depth int) any {
	k := f.r.IntN(8)
	if depth <= 0 && k >= 5 {
		k = f.r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return f.r.IntN(2) == 0
	case 2:
		return f.r.NormFloat64() * 1e6
	case 3:
		return f.str(20)
	case 4:
		return f.r.Int64()
	case 5, 6:
		m := map[string]any{}
		for i := f.r.IntN(5); i > 0; i-- {
			m[f.str(12)] = f.value(depth - 1)
		}
		return m
	default:
		a := make([]any, f.r.IntN(5))
		for i := range a {
			a[i] = f.value(depth - 1)
		}
		return a
	}
}

// providerSpec mutates the valid spec or replaces it.
func (f *fuzzer) providerSpec() []byte {
	var base map[string]any
	_ = json.Unmarshal(f.spec, &base)
	switch f.r.IntN(8) {
	case 0:
		return nil
	case 1:
		b, _ := json.Marshal(f.value(4))
		return b
	case 2: // deep nesting
		d := 50 + f.r.IntN(200)
		return []byte(strings.Repeat("[", d) + strings.Repeat("]", d))
	case 3: // valid as configured
		return f.spec
	}
	if base == nil {
		b, _ := json.Marshal(f.value(3))
		return b
	}
	// Mutate: replace, drop or add fields, one level into cloudProviderSpec.
	target := base
	if cps, ok := base["cloudProviderSpec"].(map[string]any); ok && f.r.IntN(2) == 0 {
		target = cps
	}
	for i := 1 + f.r.IntN(3); i > 0; i-- {
		keys := make([]string, 0, len(target))
		for k := range target {
			keys = append(keys, k)
		}
		sortStrings(keys)
		switch {
		case len(keys) > 0 && f.r.IntN(3) == 0:
			delete(target, keys[f.r.IntN(len(keys))])
		case len(keys) > 0 && f.r.IntN(2) == 0:
			target[keys[f.r.IntN(len(keys))]] = f.value(2)
		default:
			target[f.str(10)] = f.value(2)
		}
	}
	b, _ := json.Marshal(base)
	return b
}

func (f *fuzzer) labels() map[string]string {
	if f.r.IntN(2) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := f.r.IntN(4); i > 0; i-- {
		m[f.str(10)] = f.str(20)
	}
	return m
}

func (f *fuzzer) machine(i int) (*clusterv1alpha1.Machine, string, types.UID) {
	name := f.name()
	// A Machine always has a UID (the API server sets it), and a provider
	// may use it as its instance ID, which a running Instance must have
	// (SPEC §8.1): fuzz its value, never its presence.
	u := types.UID("u" + f.str(35))
	if f.r.IntN(2) == 0 {
		u = uid(fmt.Sprintf("fuzz/%d", i))
	}
	m := newMachine(name, u, nil)
	m.Spec.Name = name
	if f.r.IntN(4) == 0 {
		m.Spec.Name = f.name()
	}
	if spec := f.providerSpec(); spec != nil {
		m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: spec}
	}
	m.Labels, m.Annotations = f.labels(), f.labels()
	m.Spec.Labels = f.labels()
	if f.r.IntN(3) == 0 {
		m.Spec.Versions.Kubelet = f.str(10)
	}
	if f.r.IntN(4) == 0 {
		id := f.str(30)
		m.Spec.ProviderID = &id
	}
	newUID := types.UID("u" + f.str(35))
	return m, f.str(200), newUID
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func checkFuzz(t *T) error {
	f := &fuzzer{r: rand.New(rand.NewPCG(t.env.cfg.Seed, 0x5eed)), spec: t.env.spec}
	var problems []string
	for i := 0; i < t.env.cfg.FuzzMachines; i++ {
		m, ud, newUID := f.machine(i)
		desc := fmt.Sprintf("fuzzed Machine #%d (seed %d, name %q, providerSpec %s)", i, t.env.cfg.Seed, truncate(m.Name, 40), truncate(rawSpec(m), 120))
		// Each fuzzed Machine lives in a store of its own (fuzzed names
		// collide), and each call gets it as the provider's updates left it.
		store := newMachineStore()
		store.put(m)
		created, deleteErr := false, error(nil)
		cur := func() *clusterv1alpha1.Machine { return store.current(m) }
		calls := []struct {
			name string
			do   func() error
		}{
			{"AddDefaults", func() error {
				ctx, c := t.call()
				defer c()
				_, err := t.env.p.AddDefaults(ctx, m.Spec, nil)
				return err
			}},
			{"Validate", func() error { ctx, c := t.call(); defer c(); return t.env.p.Validate(ctx, m.Spec, nil) }},
			{"GetCloudConfig", func() error {
				ctx, c := t.call()
				defer c()
				_, _, err := t.env.p.GetCloudConfig(ctx, m.Spec, nil)
				return err
			}},
			{"MachineMetricsLabels", func() error {
				ctx, c := t.call()
				defer c()
				_, err := t.env.p.MachineMetricsLabels(ctx, cur(), nil)
				return err
			}},
			{"Get", func() error { ctx, c := t.call(); defer c(); _, err := t.env.p.Get(ctx, cur(), nil); return err }},
			{"Create", func() error {
				ctx, c := t.call()
				defer c()
				_, err := t.env.p.Create(ctx, cur(), createData(store), ud)
				if err == nil {
					created = true
					t.env.journal.record(t.id, cur())
				}
				return err
			}},
			{"Get after Create", func() error { ctx, c := t.call(); defer c(); _, err := t.env.p.Get(ctx, cur(), nil); return err }},
			{"MigrateUID", func() error { ctx, c := t.call(); defer c(); return t.env.p.MigrateUID(ctx, cur(), newUID, nil) }},
			{"Delete", func() error {
				// Once each, by the old and the new UID: a fuzzed Machine
				// may never be deletable, and retrying would only be slow.
				ctx, c := t.call()
				defer c()
				if err := t.env.p.Delete(ctx, cur(), createData(store)); sandboxFailure(err) {
					return err
				}
				mm := cur()
				mm.UID = newUID
				store.put(mm)
				deleteErr = t.env.p.Delete(ctx, cur(), createData(store))
				if deleteErr == nil {
					t.env.journal.forget(t.id, mm.Name)
				}
				return deleteErr
			}},
		}
		for _, c := range calls {
			if err := c.do(); sandboxFailure(err) {
				problems = append(problems, fmt.Sprintf("%s on %s: %s", c.name, desc, describe(err)))
			}
		}
		if created && deleteErr != nil && !sandboxFailure(deleteErr) {
			// What Create made is deleted as the controller would, until
			// done (an async_delete provider answers in progress first).
			sub := &T{env: t.env, ctx: t.ctx, id: t.id, store: store}
			t.cleanupFailed(m, sub.deleteAll(m))
		}
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return failf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

func rawSpec(m *clusterv1alpha1.Machine) string {
	if m.Spec.ProviderSpec.Value == nil {
		return "<none>"
	}
	return string(m.Spec.ProviderSpec.Value.Raw)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
