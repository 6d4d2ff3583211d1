#!/usr/bin/env bash
# Prints every fuzz target of the main module as ./dir:FuzzName, one a line,
# from its test files (the other modules — bench, e2e, hack/kapi, the
# hcloud-go example, the machine-controller fixture — fuzz nothing).
# `make fuzz-smoke` runs them all; internal/architecture's
# TestFuzzTargetsAreFound checks this list against `go test -list`.
set -euo pipefail
cd "$(dirname "$0")/.."
git grep -n -E '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go' ':!bench/' ':!e2e/' ':!hack/' \
	':!examples/hetzner-hcloudgo/' ':!cmd/wasmprov/testdata/' |
	sed -E 's|^(.*)/[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*|./\1:\2|' | LC_ALL=C sort
