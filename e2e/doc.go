// Package e2e holds wasmprov's end-to-end tests (build tag e2e): the
// Machine controller (e2e_test.go, wasmprovider_test.go) and the Cluster
// API provider under Cluster API's own controllers (clusterapi_test.go);
// `make e2e`.
package e2e
