// Package crd holds the CustomResourceDefinitions the controller works
// with (Machine, WasmProvider), as YAML and embedded for tests and
// installers.
package crd

import _ "embed"

// MachinesYAML is cluster.k8s.io_machines.yaml.
//
//go:embed cluster.k8s.io_machines.yaml
var MachinesYAML []byte

// WasmProvidersYAML is wasmprov.io_wasmproviders.yaml.
//
//go:embed wasmprov.io_wasmproviders.yaml
var WasmProvidersYAML []byte
