# wasmprov — see README.md. Every target installs or builds what it needs.
SHELL := /bin/bash
GO ?= go
BUILD := build
GUEST_GOFLAGS := -buildmode=c-shared -trimpath
# Guests compiled from Go sources in this repository.
GO_GUESTS := examples/fake examples/hostcalls examples/hetzner
GUEST_WASM := $(foreach g,$(GO_GUESTS),$(BUILD)/guests/$(notdir $(g)).wasm)
export WASMPROV_TEST_CACHE ?= $(HOME)/.cache/wasmprov-test

# Debian packages some tests need: wabt (wat2wasm, fixture checks); clang,
# lld, wasi-libc and the wasm32 compiler runtime (the C guest).
DEBIAN_PACKAGES := wabt clang lld wasi-libc libclang-rt-dev-wasm32

.PHONY: all guests demo demo-fake hcloudgo-guest test test-wasmtime test-short vet fmt-check bench cli abi-fixtures clean debian-packages

all: cli guests

## guests: build every example provider to build/guests/NAME.wasm
guests: $(GUEST_WASM)

$(BUILD)/guests/%.wasm: FORCE
	@mkdir -p $(dir $@)
	@src=$$(for g in $(GO_GUESTS); do [ "$$(basename $$g)" = "$*" ] && echo $$g; done); \
	  echo "building guest $$src -> $@"; \
	  cd $$src && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build $(GUEST_GOFLAGS) -o $(CURDIR)/$@ .

FORCE:

## cli: build the wasmprov command to build/wasmprov
cli:
	@mkdir -p $(BUILD)
	$(GO) build -o $(BUILD)/wasmprov ./cmd/wasmprov

## demo: three Machines through the Hetzner provider's whole lifecycle, on a
## local Hetzner Cloud API simulator (no cluster, no cloud)
demo: guests
	$(GO) build -o $(BUILD)/hetzner-demo ./examples/hetzner/demo
	$(BUILD)/hetzner-demo --provider $(BUILD)/guests/hetzner.wasm

## demo-fake: the fake provider's lifecycle through the wasmprov CLI
demo-fake: cli guests
	$(BUILD)/wasmprov demo --provider $(BUILD)/guests/fake.wasm

## hcloudgo-guest: the Hetzner provider built on hcloud-go (its own module)
hcloudgo-guest:
	@mkdir -p $(BUILD)/guests
	cd examples/hetzner-hcloudgo && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build $(GUEST_GOFLAGS) -o $(CURDIR)/$(BUILD)/guests/hetzner-hcloudgo.wasm .

## debian-packages: install the Debian packages the tests need (once)
debian-packages:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The packages that run guests concurrently with host code, where the race
# detector finds real bugs, run with it; the suites that mostly compile and
# drive guests (conformance, the examples, the CLI) run without it, which
# cuts their wazero compile time several-fold. Together they are ./...
RACE_PKGS := ./abi/... ./apis/... ./cassette/... ./cloud/... ./controller/... ./guests/... ./hostfuncs/... ./runtime/...
PLAIN_PKGS := ./cmd/... ./conformance/... ./examples/... ./internal/...

## test: vet, format check and the whole test suite (race detector on for the runtime packages)
test: debian-packages fmt-check vet
	@missing=$$(comm -23 <($(GO) list ./... | sort) <($(GO) list $(RACE_PKGS) $(PLAIN_PKGS) | sort)); \
	  if [ -n "$$missing" ]; then echo "packages in neither test group: $$missing"; exit 1; fi
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 30m $(PLAIN_PKGS)

## test-wasmtime: the suites that drive guests, again on the wasmtime engine
## (cgo, build tag wasmtime; the engine is chosen by WASMPROV_ENGINE)
WASMTIME_PKGS := ./runtime/... ./hostfuncs/... ./conformance/... ./examples/... ./cmd/...
test-wasmtime: debian-packages
	CGO_ENABLED=1 $(GO) vet -tags wasmtime ./runtime/... ./hostfuncs/...
	CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime -count=1 -timeout 30m $(WASMTIME_PKGS)

test-short:
	$(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./abi/... ./guests/... ./examples/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the core call-path benchmarks, then the side-by-side comparison
## (tens of minutes; see docs/BENCHMARKS.md)
bench:
	@mkdir -p $(BUILD)
	$(GO) test -run '^$$' -bench 'EmptyCall|Validate|Deadline' -benchmem -count 5 ./runtime/ | tee $(BUILD)/bench-core.txt
	CGO_ENABLED=1 WASMPROV_ENGINE=wasmtime $(GO) test -tags wasmtime -run '^$$' -bench 'EmptyCall|Validate|Deadline' -benchmem -count 5 ./runtime/ | tee $(BUILD)/bench-core-wasmtime.txt
	$(MAKE) bench-compare

## abi-fixtures: regenerate the hand-written .wat test modules' .wasm (needs wabt)
abi-fixtures:
	@command -v wat2wasm >/dev/null || { apt-get update -qq && apt-get install -y -qq wabt; }
	for f in runtime/testdata/abi/*.wat; do wat2wasm "$$f" -o "$${f%.wat}.wasm"; done

clean:
	rm -rf $(BUILD)

## fixtures: regenerate the malicious-guest .wasm from their .wat (needs wabt)
.PHONY: fixtures
fixtures:
	@command -v wat2wasm >/dev/null || { apt-get update -qq && apt-get install -y -qq wabt; }
	for f in runtime/testdata/malicious/*.wat; do wat2wasm "$$f" -o "$${f%.wat}.wasm"; done

# ---- provider author kit: C guest, conformance (issue 8) ---------------------
# Needs Debian's clang lld wasi-libc libclang-rt-dev-wasm32 (C guest) and wabt
# (the broken .wat provider); `make test` runs the conformance suite against
# every example provider and every deliberately broken provider (./conformance).
.PHONY: c-guests conformance
guests: c-guests

## c-guests: build the C example provider to build/guests/c-fake.wasm
c-guests: debian-packages $(BUILD)/guests/c-fake.wasm

$(BUILD)/guests/c-fake.wasm: examples/c-fake/fake.c examples/c-fake/build.sh
	examples/c-fake/build.sh $(CURDIR)/$@

## conformance: run `wasmprov conformance` against every example provider
conformance: cli guests
	cd examples/hetzner && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build $(GUEST_GOFLAGS) -o $(CURDIR)/$(BUILD)/guests/hetzner.wasm .
	$(BUILD)/wasmprov conformance --profile stateless --spec '{"cloudProviderSpec":{"passValidation":true}}' $(BUILD)/guests/fake.wasm
	$(BUILD)/wasmprov conformance --profile stateless --spec '{"cloudProviderSpec":{"passValidation":true}}' $(BUILD)/guests/c-fake.wasm
	$(BUILD)/wasmprov conformance --cassette conformance/testdata/cassettes/hetzner.json --secret sim-token \
	  --ignore 'POST /ssh_keys name,public_key' \
	  --spec '{"cloudProvider":"hetzner","operatingSystem":"ubuntu","sshPublicKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance conformance@wasmprov"],"cloudProviderSpec":{"token":"sim-token","serverType":"cx22","location":"fsn1","image":"ubuntu-24.04","endpoint":"$${CLOUD_URL}/v1"}}' \
	  $(BUILD)/guests/hetzner.wasm

# ---- side-by-side benchmarks against native Go, Extism, go-plugin (issue 6) --
# Owned by the bench/ module's author; the lead's `bench` target above may
# call bench-compare. The bench module is separate (bench/go.mod), so its
# dependencies (go-plugin, Extism, gRPC) never reach users.
.PHONY: bench-compare bench-smoke
BENCH_COUNT ?= 5
BENCH_TIME ?= 1s
# Go build tags, comma-separated. wasmtime adds the wasmtime column (cgo:
# needs gcc); `make bench-compare BENCH_TAGS=` leaves it out (skipped).
BENCH_TAGS ?= wasmtime
BENCH_ENV = $(if $(findstring wasmtime,$(BENCH_TAGS)),CGO_ENABLED=1)
BENCH_TAGFLAG = $(if $(strip $(BENCH_TAGS)),-tags $(strip $(BENCH_TAGS)))

## bench-compare: run the side-by-side benchmarks (minutes) and write build/bench/report.md
bench-compare:
	@mkdir -p $(BUILD)/bench
	cd bench && $(BENCH_ENV) $(GO) run ./cmd/report $(BENCH_TAGFLAG) -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) \
	  -raw $(CURDIR)/$(BUILD)/bench/compare.txt -out $(CURDIR)/$(BUILD)/bench/report.md

## bench-smoke: build the bench module and run every benchmark once (CI)
bench-smoke:
	cd bench && $(BENCH_ENV) $(GO) vet $(BENCH_TAGFLAG) ./... && GOOS=wasip1 GOARCH=wasm $(GO) vet ./guests/... ./benchprov/...
	cd bench && $(BENCH_ENV) $(GO) test $(BENCH_TAGFLAG) -count=1 -run TestContenders -bench . -benchtime=1x -timeout 30m .

# ---- e2e: real kube-apiserver + etcd, `wasmprov controller`, Hetzner simulator (issue 7) --
# Owned by the controller's author. The e2e tests are a Go module of their own
# (e2e/go.mod, envtest stays out of the main go.mod); -mod=mod lets them follow
# dependencies the main module gains without a commit to e2e/go.sum.
# kube-apiserver and etcd are built from the Go module proxy and cached in
# $HOME/.cache/wasmprov/kube/<version> (or $KUBE_CACHE_DIR): cold ~16 min on
# 2 cores, then reused.
.PHONY: kube-binaries e2e e2e-vet
E2E_FLAGS ?= -v

## kube-binaries: build (or reuse) kube-apiserver and etcd; prints their directory
kube-binaries:
	hack/kube-binaries.sh

## e2e: end-to-end tests of the Machine controller on a real API server
e2e: e2e-vet
	assets=$$(hack/kube-binaries.sh) && cd e2e && KUBEBUILDER_ASSETS=$$assets GOFLAGS="$$GOFLAGS -mod=mod" \
	  $(GO) test -tags e2e -count=1 -timeout 30m $(E2E_FLAGS) ./...

e2e-vet:
	cd e2e && GOFLAGS="$$GOFLAGS -mod=mod" $(GO) vet -tags e2e ./...

## fuzz-smoke: run every fuzz target briefly (FUZZTIME each; CI)
FUZZTIME ?= 10s
FUZZ_TARGETS := \
	./hostfuncs:FuzzHTTPRequest ./hostfuncs:FuzzHTTPAllow ./hostfuncs:FuzzInternalAddr \
	./hostfuncs:FuzzConfigVar ./hostfuncs:FuzzMachineUpdate ./hostfuncs:FuzzPVList \
	./hostfuncs:FuzzLog ./hostfuncs:FuzzInput ./hostfuncs:FuzzHostArgs \
	./runtime:FuzzHostFunctionArgs ./runtime/internal/interrupt:FuzzInstrument \
	./runtime/internal/precheck:FuzzCheck ./runtime/internal/wasmbin:FuzzWalker \
	./runtime/internal/wasip1:FuzzValidPath
.PHONY: fuzz-smoke
fuzz-smoke:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
