# wasmprov. `make help` lists the targets; README.md says which to start with.
SHELL := /bin/bash
GO ?= go
BUILD := build
export WASMPROV_TEST_CACHE ?= $(HOME)/.cache/wasmprov-test

.PHONY: help all guests c-guests cli cli-lite providers demo demo-fake \
	check test test-wasmtime test-realtime vet fmt-check fuzz-smoke fixtures conformance crds \
	bench bench-compare bench-smoke kube-binaries e2e e2e-vet scale scale-smoke \
	setup modules wabt clean FORCE

## help: list the targets
help:
	@grep -hE '^## [a-z0-9-]+:' $(MAKEFILE_LIST) | sed 's/^## //' | awk -F': ' '{printf "  %-16s %s\n", $$1, $$2}'

## all: the CLI and every example provider
all: cli guests c-guests

# ---- building ---------------------------------------------------------------

GUEST_GOFLAGS := -buildmode=c-shared -trimpath
GO_GUESTS := examples/fake examples/hostcalls examples/hetzner
GUEST_WASM := $(foreach g,$(GO_GUESTS),$(BUILD)/guests/$(notdir $(g)).wasm)

## guests: build the Go example providers to build/guests/NAME.wasm (Go only)
guests: $(GUEST_WASM)

$(BUILD)/guests/%.wasm: FORCE
	@mkdir -p $(dir $@)
	@src=$$(for g in $(GO_GUESTS); do [ "$$(basename $$g)" = "$*" ] && echo $$g; done); \
	  echo "building guest $$src -> $@"; \
	  cd $$src && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build $(GUEST_GOFLAGS) -o $(CURDIR)/$@ .

## c-guests: build the C example provider to build/guests/c-fake.wasm (installs clang, lld, wasi-libc)
c-guests: setup $(BUILD)/guests/c-fake.wasm

$(BUILD)/guests/c-fake.wasm: examples/c-fake/fake.c examples/c-fake/build.sh
	examples/c-fake/build.sh $(CURDIR)/$@

## cli: build the wasmprov command to build/wasmprov
cli:
	@mkdir -p $(BUILD)
	cd cmd/wasmprov && $(GO) build -o $(CURDIR)/$(BUILD)/wasmprov .

## cli-lite: build the CLI without the controller and Kubernetes clients (-tags nokube, stripped) to build/wasmprov-lite
cli-lite:
	@mkdir -p $(BUILD)
	cd cmd/wasmprov && $(GO) build -tags nokube -ldflags='-s -w' -o $(CURDIR)/$(BUILD)/wasmprov-lite .

## crds: write the CRDs generated from the Go API types (controller/crd/infrastructure.wasmprov.io_*.yaml)
crds:
	cd controller && $(GO) run ./crd/gen ..

## providers: the Hetzner and fake providers as they ship: annotated with their metadata, in build/providers/
PROVIDER_VERSION ?= 0.1.0
providers: cli $(BUILD)/guests/hetzner.wasm $(BUILD)/guests/fake.wasm
	@mkdir -p $(BUILD)/providers
	for p in hetzner fake; do \
	  $(BUILD)/wasmprov annotate $(BUILD)/guests/$$p.wasm --name $$p --version $(PROVIDER_VERSION) \
	    --source https://github.com/wasmprov/wasmprov -o $(BUILD)/providers/$$p.wasm; \
	done

# ---- trying it --------------------------------------------------------------

## demo: three Machines through the Hetzner provider's lifecycle on a local API simulator (Go only)
demo: $(BUILD)/guests/hetzner.wasm
	$(GO) build -o $(BUILD)/hetzner-demo ./examples/hetzner/demo
	$(BUILD)/hetzner-demo --provider $(BUILD)/guests/hetzner.wasm

## demo-fake: the fake provider's lifecycle through the wasmprov CLI
demo-fake: cli $(BUILD)/guests/fake.wasm
	$(BUILD)/wasmprov demo --provider $(BUILD)/guests/fake.wasm

## conformance: run `wasmprov conformance` against every example provider
conformance: cli guests c-guests
	$(BUILD)/wasmprov conformance --profile stateless --spec '{"cloudProviderSpec":{"passValidation":true}}' $(BUILD)/guests/fake.wasm
	$(BUILD)/wasmprov conformance --spec '{"cloudProviderSpec":{"passValidation":true}}' $(BUILD)/guests/c-fake.wasm
	$(BUILD)/wasmprov conformance --spec '{"cloudProviderSpec":{}}' examples/wat-fake/fake.wasm
	$(BUILD)/wasmprov conformance --cassette conformance/testdata/cassettes/hetzner.json --secret sim-token \
	  --ignore 'POST /ssh_keys name,public_key' \
	  --spec '{"cloudProvider":"hetzner","operatingSystem":"ubuntu","operatingSystemSpec":{"distUpgradeOnBoot":false},"sshPublicKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance conformance@wasmprov"],"cloudProviderSpec":{"token":"sim-token","serverType":"cx22","location":"fsn1","image":"ubuntu-24.04","endpoint":"$${CLOUD_URL}/v1"}}' \
	  $(BUILD)/guests/hetzner.wasm

# ---- checking ---------------------------------------------------------------

# The packages that run guests concurrently with host code, where the race
# detector finds real bugs, run with it; the suites that mostly compile and
# drive guests (conformance, the examples, the CLI) and the instrumenter
# (a single-threaded byte rewriter whose tests run guests for seconds) run
# without it, which cuts their time several-fold; so do the API types and
# the signature verifier, single-threaded code whose tests would otherwise
# race-compile Sigstore's ~200 packages for nothing. Together they are ./...
# Packages without goroutines or shared state of their own (the ABI
# constants, the guest SDK's host-side tests, the metadata and module
# parsers, the memory-image splitter, the file cache, the adapters in cloud)
# run plain too: under the race detector they would only be slower.
# The plain group runs first: it compiles the example guests with wazero
# into the shared test cache ($WASMPROV_TEST_CACHE) without the race
# detector, about twelve times faster than the race group would (hetzner:
# 2.4 s against 29 s), which then finds them compiled. The race group
# compiles the other guests it builds (the runtime's and the registry's
# test guests) the same way, through a plain-built helper
# (internal/testing/testhost/precompile, $WASMPROV_TEST_PRECOMPILE).
RACE_PKGS := ./cassette/... ./cloudprovider/... ./internal/hostmodule ./internal/ratelimit ./runtime/oci \
	./runtime ./runtime/native ./runtime/registry ./runtime/metrics ./runtime/internal/engine/... ./runtime/internal/mmapmem \
	./runtime/internal/instrumented ./runtime/internal/pool ./runtime/internal/wasip1
PLAIN_PKGS := ./abi/... ./apis/... ./cloud/... ./guests/... ./hostfuncs ./provider ./internal/guesttext ./conformance/... ./examples/... \
	./internal/testing/... ./internal/fixtures ./internal/architecture ./internal/crdgen ./internal/hostalias ./internal/hostmodule/wazerohost \
	./runtime/metadata ./runtime/internal/cachefile ./runtime/internal/resultcache ./runtime/internal/memimage ./runtime/internal/precheck ./runtime/internal/wasmbin ./runtime/internal/interrupt

# The modules beside the main (embedder) one, docs/ARCHITECTURE.md
# "Modules": the controllers, tested with the race detector like the
# runtime; Sigstore signing and the CLI, without (like the CLI before);
# the test registry program, which has no tests of its own. Examples that
# are modules of their own, as an embedder's code would be, import the
# public packages only (and the test helpers).
RACE_MODULES := controller
PLAIN_MODULES := runtime/signature cmd/wasmprov
EXAMPLE_MODULES := examples/ipam examples/digitalocean
HOST_MODULES := $(RACE_MODULES) $(PLAIN_MODULES) internal/testing/testregistry/registryd

# go test's own vet pass is off everywhere: make test (vet), test-wasmtime,
# bench-smoke and e2e (e2e-vet) vet the same packages and their test files
# first, with every analyzer; go test's subset would redo the dependencies'
# facts for each build flavour (race, fuzz, wasmtime), about a tenth of a
# cold build.
TESTFLAGS := -count=1 -vet=off -timeout 30m

## check: the quick checks, gofmt and vet (seconds; make test runs them first)
check: fmt-check vet

## test: gofmt check, vet and the whole test suite, race detector on for the runtime packages (installs wabt, clang, lld, wasi-libc)
test: setup modules fmt-check vet
	@missing=$$(comm -23 <($(GO) list ./... | sort) <($(GO) list $(RACE_PKGS) $(PLAIN_PKGS) | sort)); \
	  if [ -n "$$missing" ]; then echo "packages in neither test group: $$missing"; exit 1; fi
	$(GO) test $(TESTFLAGS) -skip $(REALTIME) $(PLAIN_PKGS)
	$(GO) test -c -o $(WASMPROV_TEST_CACHE)/bin/precompile ./internal/testing/testhost/precompile
	@set -e; for m in $(PLAIN_MODULES) $(EXAMPLE_MODULES); do echo "cd $$m && $(GO) test ./..."; (cd $$m && $(GO) test $(TESTFLAGS) ./...); done
	WASMPROV_TEST_PRECOMPILE=$(WASMPROV_TEST_CACHE)/bin/precompile $(GO) test -race $(TESTFLAGS) -skip $(REALTIME) $(RACE_PKGS)
	@set -e; for m in $(RACE_MODULES); do echo "cd $$m && $(GO) test -race ./..."; \
	  (cd $$m && WASMPROV_TEST_PRECOMPILE=$(WASMPROV_TEST_CACHE)/bin/precompile $(GO) test -race $(TESTFLAGS) ./...); done

# Tests whose assertion is a wall-clock bound on a sandbox guarantee (a call
# returns at its deadline, a GC is not stalled by a spinning guest) are named
# TestRealTime*: make test and test-wasmtime skip them, test-realtime runs them
# alone, one package at a time, without the race detector, on both engines.
REALTIME := RealTime
REALTIME_PKGS := $(shell grep -rl --include='*_test.go' '^func TestRealTime' . | xargs -r -n1 dirname | sort -u)
## test-realtime: the real-time sandbox guarantees, serially and on both engines (run it alone)
test-realtime:
	$(GO) test $(TESTFLAGS) -p 1 -run $(REALTIME) $(REALTIME_PKGS)
	CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) -p 1 -run $(REALTIME) $(REALTIME_PKGS)

## test-wasmtime: the engine-dependent suites again on the wasmtime engine (cgo, build tag wasmtime)
# Only what reaches the engine runs twice: the runtime and its engines, the
# host functions, conformance (every ABI rule against real guests), the
# Hetzner provider end to end, the interrupt instrumenter's wasmtime tests
# and the machine-controller drop-in built with -tags wasmtime; the
# registry too, whose hot-reload acceptance count runs only here (without
# the race detector) and which once hung only under wasmtime's timing.
# The CLI, the controllers, the metrics collector and the adapters above
# runtime use only runtime's public API and are engine-neutral: they run
# once, in make test.
WASMTIME_PKGS := ./runtime ./runtime/internal/engine/... ./runtime/internal/wasip1 ./runtime/internal/precheck \
	./runtime/internal/mmapmem ./runtime/registry ./internal/hostmodule ./conformance/... ./examples/hetzner/e2e_test
WASMTIME_ONLY := ./runtime/internal/interrupt:Wasmtime
test-wasmtime: setup
	CGO_ENABLED=1 $(GO) vet -tags wasmtime ./runtime/... ./internal/hostmodule
	CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) -skip $(REALTIME) $(WASMTIME_PKGS)
	@set -e; for m in $(EXAMPLE_MODULES); do echo "cd $$m && go test -tags wasmtime ./..."; \
	  (cd $$m && CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) ./...); done
	@set -e; for t in $(WASMTIME_ONLY); do \
	  echo "CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) -run $${t##*:} $${t%%:*}"; \
	  CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) -run "$${t##*:}" "$${t%%:*}"; \
	done
	cd cmd/wasmprov && CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(TESTFLAGS) -run TestMachineControllerDropIn .

## vet: go vet of the host and of the wasip1 guest code
vet:
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./abi/... ./guests/... ./examples/...
	@set -e; for m in $(HOST_MODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...); done
	cd cmd/wasmprov && $(GO) vet -tags nokube .
	@set -e; for m in $(EXAMPLE_MODULES); do (cd $$m && $(GO) vet ./... && GOOS=wasip1 GOARCH=wasm $(GO) vet ./...); done

## fmt-check: fail if a tracked Go file needs gofmt
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## fuzz-smoke: run every fuzz target for FUZZTIME (CI)
# A count, not a duration: Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" when a -fuzztime duration ends
# during a worker call (go.dev/issue/75804, fixed in 1.27), and a count
# sets no deadline. It also spares CI a second toolchain: cold on
# 2026-12-06, fetching Go 1.27 and building the first three (small)
# targets with it took 5.3 of fuzz-smoke's 10.6 min. Longer runs by hand: make fuzz-smoke FUZZTIME=60s FUZZ_GO='GOTOOLCHAIN=go1.27.3 go'.
FUZZTIME ?= 2000x
FUZZ_GO ?= $(GO)
# Every fuzz target of the main module (hack/fuzz-targets.sh finds them).
FUZZ_TARGETS := $(shell hack/fuzz-targets.sh)
fuzz-smoke:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  $(FUZZ_GO) test -vet=off -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Hand-written .wat test modules and the flags their committed .wasm were
# assembled with; internal/fixtures' TestWasmFixturesMatchWat reads these two
# lists and the fixtures recipe, and compares each .wasm with a fresh wat2wasm.
WAT_PLAIN := runtime/testdata/abi runtime/testdata/malicious runtime/internal/mmapmem/testdata examples/wat-fake conformance/internal/randprobe
WAT_NAMED := runtime/internal/interrupt/testdata

## fixtures: regenerate every committed .wasm test module from its .wat (installs wabt)
fixtures: wabt
	for d in $(WAT_PLAIN); do for f in $$d/*.wat; do wat2wasm "$$f" -o "$${f%.wat}.wasm"; done; done
	for d in $(WAT_NAMED); do for f in $$d/*.wat; do wat2wasm --debug-names "$$f" -o "$${f%.wat}.wasm"; done; done

# ---- benchmarks (docs/BENCHMARKS.md) ----------------------------------------

# The side-by-side comparison is the bench/ module (its own go.mod, so
# go-plugin, Extism and gRPC never reach users). BENCH_TAGS= leaves the
# wasmtime column out (it needs cgo).
BENCH_COUNT ?= 5
BENCH_TIME ?= 1s
BENCH_TAGS ?= wasmtime
BENCH_ENV = $(if $(findstring wasmtime,$(BENCH_TAGS)),CGO_ENABLED=1)
BENCH_TAGFLAG = $(if $(strip $(BENCH_TAGS)),-tags $(strip $(BENCH_TAGS)))
CORE_BENCH := -run '^$$' -bench 'EmptyCall|Validate|Deadline' -benchmem -count 5 ./runtime/

## bench: the core call-path benchmarks on both engines, then bench-compare (tens of minutes)
bench:
	@mkdir -p $(BUILD)
	$(GO) test $(CORE_BENCH) | tee $(BUILD)/bench-core.txt
	CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime $(CORE_BENCH) | tee $(BUILD)/bench-core-wasmtime.txt
	$(MAKE) bench-compare

## bench-compare: native Go, wasmprov, Extism, go-plugin side by side; writes build/bench/report.md
bench-compare:
	@mkdir -p $(BUILD)/bench
	cd bench && $(BENCH_ENV) $(GO) run ./cmd/report $(BENCH_TAGFLAG) -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) \
	  -raw $(CURDIR)/$(BUILD)/bench/compare.txt -out $(CURDIR)/$(BUILD)/bench/report.md

## bench-smoke: vet the bench module and run every benchmark once (CI)
bench-smoke:
	cd bench && $(BENCH_ENV) $(GO) vet $(BENCH_TAGFLAG) ./... && GOOS=wasip1 GOARCH=wasm $(GO) vet ./guests/... ./benchprov/...
	cd bench && $(BENCH_ENV) $(GO) test $(BENCH_TAGFLAG) -count=1 -vet=off -run TestContenders -bench . -benchtime=1x -timeout 30m .

# ---- end to end: a real kube-apiserver and etcd -----------------------------

# The e2e tests are a module of their own (e2e/go.mod keeps envtest out of
# the main go.mod); -mod=mod lets them follow the main module's
# dependencies without a commit to e2e/go.sum. kube-apiserver and etcd are
# built from the Go module proxy and cached in $HOME/.cache/wasmprov/kube
# (or $KUBE_CACHE_DIR): about 15 CPU-minutes cold (hack/kube-binaries.sh), then reused.
E2E_FLAGS ?= -v

## kube-binaries: build (or reuse) kube-apiserver and etcd; prints their directory
kube-binaries:
	hack/kube-binaries.sh

## e2e: the Machine controller and the Cluster API provider end to end on a real API server
e2e: e2e-vet
	assets=$$(hack/kube-binaries.sh) && cd e2e && KUBEBUILDER_ASSETS=$$assets GOFLAGS="$$GOFLAGS -mod=mod" \
	  $(GO) test -tags e2e $(TESTFLAGS) $(E2E_FLAGS) ./...

## e2e-vet: go vet of the e2e module
e2e-vet:
	cd e2e && GOFLAGS="$$GOFLAGS -mod=mod" $(GO) vet -tags e2e ./...

# The load and fault harness (docs/SCALE.md): SCALE_N machines per
# scenario (direct, capi, kill, apiserver, hotswap; faults takes
# SCALE_FAULT_N, default 100, bounded by its 10 requests a second);
# SCALE_WRITE=1 writes the figures, time series and plots to docs/scale/.
# SCALE_FLAGS adds controller flags.
SCALE_N ?= 1000
SCALE_SCENARIOS ?= all
SCALE_TIMEOUT ?= 60m

## scale: the load and fault harness, SCALE_N machines (1000) per scenario of SCALE_SCENARIOS (all = direct,capi,faults,kill,apiserver,hotswap); see docs/SCALE.md
scale:
	cd e2e && GOFLAGS="$$GOFLAGS -mod=mod" $(GO) vet -tags e2e,scale ./...
	assets=$$(hack/kube-binaries.sh) && cd e2e && KUBEBUILDER_ASSETS=$$assets GOFLAGS="$$GOFLAGS -mod=mod" \
	  SCALE_N=$(SCALE_N) SCALE_SCENARIOS=$(SCALE_SCENARIOS) \
	  $(GO) test -tags e2e,scale -count=1 -vet=off -run TestScale -timeout $(SCALE_TIMEOUT) -v .

# faults is left out: its cloud's 10 requests a second make even 20
# machines take over a minute.
## scale-smoke: the harness at N=20 (kills every 5s), every scenario but faults, nothing written (CI, about 1.5 min warm)
scale-smoke:
	$(MAKE) scale SCALE_N=20 SCALE_KILL_EVERY=5s SCALE_SCENARIOS=direct,capi,kill,apiserver,hotswap SCALE_WRITE= SCALE_TIMEOUT=10m

# ---- machine set-up ---------------------------------------------------------

# wabt: wat2wasm (the fixture checks); clang, lld, wasi-libc and the wasm32
# compiler runtime: the C guest.
DEBIAN_PACKAGES := wabt clang lld wasi-libc libclang-rt-dev-wasm32

# The modules beside the main one (NESTED_MODULES) are downloaded here, not
# by a test: internal/architecture lists their packages with GOPROXY=off.
NESTED_MODULES := $(HOST_MODULES) $(EXAMPLE_MODULES) bench e2e cmd/wasmprov/testdata/machine-controller
## modules: download the Go modules of the main module and of the modules beside it
modules:
	$(GO) mod download
	@set -e; for m in $(NESTED_MODULES); do echo "cd $$m && $(GO) mod download"; (cd $$m && $(GO) mod download); done

## setup: install the Debian packages the tests need, if missing (needs root; a no-op once installed)
setup:
	@$(call apt-install,$(DEBIAN_PACKAGES))

wabt:
	@$(call apt-install,wabt)

# apt-install installs those of the Debian packages $(1) that are missing.
define apt-install
missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
if [ -n "$$missing" ]; then \
  echo "installing Debian packages:" $$missing; \
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
fi
endef

## clean: remove build/
clean:
	rm -rf $(BUILD)

FORCE:
