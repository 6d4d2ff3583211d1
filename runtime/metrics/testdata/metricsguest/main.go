//go:build wasip1

// Command metricsguest is a provider module written against the raw
// wasmprov_v1 ABI, without the Go SDK, that exports the optional
// SetMetricsForMachines: it reports how many Machines it was given and one
// series per Machine. The other methods answer as an empty cloud would.
//
// Mode (set with -X main.Mode=...) "refused" makes it report a negative
// counter, a result the host refuses whole.
package main

import (
	"encoding/json"
	"unsafe"
)

// Mode selects a misbehaviour; "" behaves.
var Mode string

const (
	statusOK       = 0
	statusNotFound = 3
	inputMachines  = 7 // abi.InputMachineList
)

//go:wasmimport wasmprov_v1 input
func hostInput(part int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 take_result
func hostTakeResult(buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 output
func hostOutput(ptr unsafe.Pointer, n int32) int32

//go:wasmexport wasmprov_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport wasmprov_capabilities
func capabilities() int64 { return 0 }

//go:wasmexport wasmprov_add_defaults
func addDefaults() int32 { return statusOK }

//go:wasmexport wasmprov_validate
func validate() int32 { return statusOK }

//go:wasmexport wasmprov_get
func get() int32 { return statusNotFound }

//go:wasmexport wasmprov_get_cloud_config
func getCloudConfig() int32 { return statusOK }

//go:wasmexport wasmprov_create
func create() int32 { return statusNotFound }

//go:wasmexport wasmprov_delete
func del() int32 { return statusNotFound }

//go:wasmexport wasmprov_machine_metrics_labels
func machineMetricsLabels() int32 { return statusOK }

//go:wasmexport wasmprov_migrate_uid
func migrateUID() int32 { return statusOK }

type sample struct {
	Name   string            `json:"name"`
	Help   string            `json:"help,omitempty"`
	Type   string            `json:"type"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

//go:wasmexport wasmprov_set_metrics_for_machines
func setMetricsForMachines() int32 {
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(input(inputMachines), &list); err != nil {
		panic(err)
	}
	out := []sample{{Name: "machines", Help: "Machines the host handed over.", Type: "gauge", Value: float64(len(list.Items))}}
	for _, m := range list.Items {
		out = append(out, sample{Name: "machine_up", Type: "gauge", Labels: map[string]string{"machine": m.Metadata.Name}, Value: 1})
	}
	if Mode == "refused" {
		out = append(out, sample{Name: "broken_total", Type: "counter", Value: -1})
	}
	b, err := json.Marshal(map[string]any{"metrics": out})
	if err != nil {
		panic(err)
	}
	if rc := hostOutput(unsafe.Pointer(&b[0]), int32(len(b))); rc != 0 {
		panic("output refused")
	}
	return statusOK
}

// input reads one input part, any size.
func input(part int32) []byte {
	buf := make([]byte, 64<<10)
	n := hostInput(part, unsafe.Pointer(&buf[0]), int32(len(buf)))
	if n < 0 {
		panic("input failed")
	}
	if int(n) <= len(buf) {
		return buf[:n]
	}
	buf = make([]byte, n)
	if hostTakeResult(unsafe.Pointer(&buf[0]), int32(n)) != n {
		panic("take_result failed")
	}
	return buf
}

func main() {}
