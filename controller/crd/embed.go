// Package crd holds the Machine CustomResourceDefinition the controller
// works with, as YAML and embedded for tests and installers.
package crd

import _ "embed"

// MachinesYAML is cluster.k8s.io_machines.yaml.
//
//go:embed cluster.k8s.io_machines.yaml
var MachinesYAML []byte
