package crd

import (
	"path/filepath"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/crdgen"
)

// InfrastructureTypesGo is the source of the infrastructure API types,
// relative to the repository's root: its doc comments are the CRDs'
// descriptions.
const InfrastructureTypesGo = "apis/infrastructure/v1alpha1/types.go"

// Infrastructure returns the CRDs of the Cluster API infrastructure
// provider (infrastructure.wasmprov.io), file name to content, written
// from the Go types; root is the repository's root.
func Infrastructure(root string) (map[string][]byte, error) {
	docs, err := crdgen.Docs(filepath.Join(root, InfrastructureTypesGo))
	if err != nil {
		return nil, err
	}
	// Cluster API finds the version of a provider's CRD that implements
	// its contract by this label.
	labels := map[string]string{infrav1.ContractLabel: infrav1.GroupVersion}
	header := func(kind string) string {
		return "The " + infrav1.GroupName + "/" + infrav1.GroupVersion + " " + kind + " CRD.\n\n" +
			"Written by `make crds` from " + InfrastructureTypesGo + " (package internal/crdgen);\n" +
			"controller/crd's tests fail when it differs from what the types give.\n"
	}
	defs := []crdgen.Definition{{
		Header: header("WasmMachine") + "\nCluster API's InfraMachine: a machine created by a wasmprov provider.",
		Group:  infrav1.GroupName, Version: infrav1.GroupVersion,
		Kind: "WasmMachine", ListKind: "WasmMachineList", Plural: "wasmmachines", Singular: "wasmmachine",
		ShortNames: []string{"wm"}, Categories: []string{"cluster-api", "wasmprov"},
		Namespaced: true, Labels: labels, StatusSubresource: true,
		PrinterColumns: []crdgen.PrinterColumn{
			{Name: "Provider", Type: "string", JSONPath: ".spec.providerSpec.cloudProvider", Description: "the wasmprov provider"},
			{Name: "ProviderID", Type: "string", JSONPath: ".spec.providerID"},
			{Name: "Provisioned", Type: "boolean", JSONPath: ".status.initialization.provisioned"},
			{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		Object: &infrav1.WasmMachine{}, Docs: docs,
	}, {
		Header: header("WasmMachineTemplate") + "\nCluster API's InfraMachineTemplate: what MachineSets stamp WasmMachines from.",
		Group:  infrav1.GroupName, Version: infrav1.GroupVersion,
		Kind: "WasmMachineTemplate", ListKind: "WasmMachineTemplateList", Plural: "wasmmachinetemplates", Singular: "wasmmachinetemplate",
		ShortNames: []string{"wmt"}, Categories: []string{"cluster-api", "wasmprov"},
		Namespaced: true, Labels: labels,
		PrinterColumns: []crdgen.PrinterColumn{
			{Name: "Provider", Type: "string", JSONPath: ".spec.template.spec.providerSpec.cloudProvider"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		Object: &infrav1.WasmMachineTemplate{}, Docs: docs,
	}, {
		Header: header("WasmCluster") + "\nCluster API's InfraCluster: provisioned at once; wasmprov makes no cluster-wide infrastructure.",
		Group:  infrav1.GroupName, Version: infrav1.GroupVersion,
		Kind: "WasmCluster", ListKind: "WasmClusterList", Plural: "wasmclusters", Singular: "wasmcluster",
		ShortNames: []string{"wc"}, Categories: []string{"cluster-api", "wasmprov"},
		Namespaced: true, Labels: labels, StatusSubresource: true,
		PrinterColumns: []crdgen.PrinterColumn{
			{Name: "Endpoint", Type: "string", JSONPath: ".spec.controlPlaneEndpoint.host"},
			{Name: "Provisioned", Type: "boolean", JSONPath: ".status.initialization.provisioned"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		},
		Object: &infrav1.WasmCluster{}, Docs: docs,
	}}
	out := map[string][]byte{}
	for _, d := range defs {
		y, err := d.YAML()
		if err != nil {
			return nil, err
		}
		out[d.Group+"_"+d.Plural+".yaml"] = y
	}
	return out, nil
}
