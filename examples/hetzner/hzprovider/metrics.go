package hzprovider

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// MachinesMetric is the gauge SetMetricsForMachines reports (exposed as
// wasmprov_guest_<provider>_machines): the Machines by the server type and
// location of their providerSpec.
const MachinesMetric = "machines"

// unknown is the label value of a field that cannot be read from the
// providerSpec alone: a Secret or ConfigMap reference, or a spec that
// does not decode.
const unknown = "unknown"

var _ provider.MetricsReporter = (*Provider)(nil)

// SetMetricsForMachines counts the Machines by server_type and location
// (a datacenter's location when the spec names a datacenter). It reads
// the providerSpecs only: the call has no Machine of its own, hence no
// Secrets and no token, so it makes no API call, and a value given by
// reference is counted as "unknown".
func (p *Provider) SetMetricsForMachines(_ context.Context, machines []provider.Machine) ([]provider.Metric, error) {
	type key struct{ serverType, location string }
	counts := map[key]float64{}
	for _, m := range machines {
		k := key{unknown, unknown}
		if _, raw, err := decodeRaw(m.Spec); err == nil {
			if st, ok := inline(raw.ServerType); ok && st != "" {
				k.serverType = st
			}
			loc, ok := inline(raw.Location)
			if dc, dok := inline(raw.Datacenter); (!ok || loc == "") && dok && dc != "" {
				loc, ok = locationOfDatacenter(dc)
			}
			if ok && loc != "" {
				k.location = loc
			}
		}
		counts[k]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].serverType != keys[j].serverType {
			return keys[i].serverType < keys[j].serverType
		}
		return keys[i].location < keys[j].location
	})
	out := make([]provider.Metric, 0, len(keys))
	for _, k := range keys {
		out = append(out, provider.Metric{
			Name:   MachinesMetric,
			Help:   "Machines served by the Hetzner provider, by the server type and location of their providerSpec.",
			Type:   abi.MetricGauge,
			Labels: map[string]string{"server_type": k.serverType, "location": k.location},
			Value:  counts[k],
		})
	}
	return out, nil
}

// inline returns a ConfigVarString's value when the spec holds it (a bare
// string, or {value} without a reference), without a host call.
func inline(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var v configVar
	if json.Unmarshal(raw, &v) != nil || isRef(v.SecretKeyRef) || isRef(v.ConfigMapKeyRef) {
		return "", false
	}
	if v.Value == nil {
		return "", true
	}
	return *v.Value, true
}
