// Package e2e holds wasmprov's end-to-end tests (build tag e2e); see
// e2e_test.go and `make e2e`.
package e2e
