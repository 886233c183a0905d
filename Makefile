# holdfast's developer entry points. Everything is installed from the Go module proxy:
# the developer tools are pinned in hack/tools/go.mod and run with `go tool`, the
# control plane of the testbed is built by hack/testbed into a cache outside the
# repository (a cold build takes 5 to 15 minutes on 2 cores, later runs reuse it), and
# hack/karpenter builds Karpenter's kwok provider for the e2e tests the same way, and
# hack/cluster-autoscaler builds cluster-autoscaler from the source vendored there (the
# module proxy does not serve it; its dependencies come from the proxy).

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
# One build of every package serves the tests, bin/holdfast, the image and the testbed:
# the image must be static and reproducible (no cgo, no local paths), and the Go build
# cache keys each compiled package by these settings, so a test built with cgo and local
# paths would compile every dependency again for the image and again for bin/holdfast.
export CGO_ENABLED := 0
export GOFLAGS += -trimpath
TOOL := $(GO) tool -modfile=hack/tools/go.mod
BIN := bin
TESTBED := $(BIN)/testbed
TESTBED_DIR ?= /tmp/holdfast-testbed
NODES ?= 6
ZONES ?= 3
# make fuzz runs each target for a number of inputs (about 20 s each on 2 cores), not for
# a time: a time limit races Go 1.26's fuzzing coordinator, which can fail a clean run as
# it stops ("context deadline exceeded" and no input written: golang/go#75804, fixed in
# Go 1.27). FUZZRUNS multiplies the numbers: FUZZRUNS=30 fuzzes for about ten minutes.
FUZZRUNS ?= 1
# Each new input a fuzz run finds is minimized first, for up to a minute by default: a
# short run then spends its time minimizing its first find (FuzzLoadManifests in 20 s,
# cold: 34 inputs tried and none kept; with 2 s, 19,087 tried and 33 kept).
FUZZMINIMIZETIME ?= 2s
# go test's own parallelism: each e2e package starts a testbed of its own and mostly
# waits on it (test/e2e/zones: 25 s of CPU in 86 s, testbed included), so 4 at once fit
# 2 cores; hack/testtimes prints how many ran at once. Fewer where memory is short.
E2E_PARALLEL ?= 4
# Parallel tests within a package: only the GitOps cases run so, each on nodes of its
# own and mostly waiting for pods to start.
E2E_TESTS_PARALLEL ?= 8
# E2E_JSONFILE, when set, keeps every e2e test's whole output (gotestsum --jsonfile).
E2E_JSONFILE ?=
E2E_TIMEOUT ?= 45m
# E2E_FIRST are the longest e2e packages (by the e2e JSON's elapsed times), started first
# so that the run does not end on one of them alone; go test runs each package once.
E2E_FIRST ?= clusterautoscaler testbed disruptionpolicy nodefailure karpenter

# VERSION is the release the chart and config/default install (a test keeps them in
# step); the binaries and images say what git says: the tag itself on a release.
RELEASE := $(shell cat VERSION)
GIT_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# The commit's time, not the clock's, so that a rebuild of a commit gives the same bytes.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_PKG := github.com/holdfast-dev/holdfast/internal/buildinfo
VERSION_LDFLAGS := -X $(VERSION_PKG).Version=$(GIT_VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)
# Shipped binaries drop the symbol table and DWARF; bin/holdfast keeps them for debuggers.
LDFLAGS := -s -w $(VERSION_LDFLAGS)
IMAGE_REPO ?= ghcr.io/holdfast-dev/holdfast
DIST ?= dist
export GIT_VERSION COMMIT BUILD_DATE LDFLAGS IMAGE_REPO RELEASE

.PHONY: all
all: build ## The default: build.

.PHONY: build
# bin/holdfast is static, as shipped: with cgo, the plugin package (linked through
# kustomize) makes the binary dynamically linked with every symbol exported, and the
# operator some 30 MB more resident (docs/engineering/performance.md).
build: ## Build bin/holdfast and bin/testbed.
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/holdfast ./cmd/holdfast
	cd hack/testbed && $(GO) build -o ../../$(TESTBED) .

.PHONY: test
test: test-unit test-monitoring fuzz image-check test-e2e ## Every test: unit (with the chart's), alert rules, fuzz, the image, end-to-end on the testbed.

.PHONY: test-unit
test-unit: ## Unit tests of every package (no cluster).
	$(TOOL) gotestsum --format testname -- -count=1 ./...

.PHONY: test-monitoring
test-monitoring: ## The alert rules, evaluated by Prometheus's rule engine (hack/monitoring, a module of its own).
	cd hack/monitoring && $(GO) test -count=1 ./...

.PHONY: fuzz
fuzz: ## A short fuzz run of the manifest loader, of its block-style YAML reader against yaml.v3, of its typed decoding against the strict JSON decoder, and of -k's kustomize build, about 20 s each (FUZZRUNS=N: N times as many inputs).
	$(GO) test -run '^$$' -fuzz FuzzLoadManifests -fuzztime $$((10000 * $(FUZZRUNS)))x -fuzzminimizetime $(FUZZMINIMIZETIME) ./internal/snapshot/
	$(GO) test -run '^$$' -fuzz FuzzBlockYAML -fuzztime $$((40000 * $(FUZZRUNS)))x -fuzzminimizetime $(FUZZMINIMIZETIME) ./internal/snapshot/
	$(GO) test -run '^$$' -fuzz FuzzDecodeTyped -fuzztime $$((6000 * $(FUZZRUNS)))x -fuzzminimizetime $(FUZZMINIMIZETIME) ./internal/snapshot/
	$(GO) test -run '^$$' -fuzz FuzzKustomize -fuzztime $$((3000 * $(FUZZRUNS)))x -fuzzminimizetime $(FUZZMINIMIZETIME) ./internal/snapshot/kustomize/

.PHONY: licenses
licenses: ## Write bin/THIRD_PARTY_LICENSES, the licence texts of every module holdfast links, which the image and the release archives ship.
	hack/licenses.sh $(BIN)/THIRD_PARTY_LICENSES

.PHONY: licenses-check
licenses-check: ## Check that every module holdfast links has a licence that allows shipping it (go-licenses).
	$(TOOL) go-licenses check ./cmd/holdfast --allowed_licenses=Apache-2.0,BSD-2-Clause,BSD-3-Clause,MIT,ISC

.PHONY: vulncheck
vulncheck: ## Known vulnerabilities the code reaches in its dependencies (govulncheck; needs the Go vulnerability database online).
	$(TOOL) govulncheck ./...

.PHONY: image
image: licenses ## Build the OCI image tarball bin/holdfast-image.tar (the operator alone, cmd/holdfast-operator) without a Docker engine.
	GOOS=linux GOARCH=amd64 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/linux/holdfast-operator ./cmd/holdfast-operator
	cd hack/image && $(GO) run . build --binary ../../$(BIN)/linux/holdfast-operator --tag $(IMAGE_REPO):$(GIT_VERSION) \
		--version $(GIT_VERSION) --revision $(COMMIT) --created $(BUILD_DATE) --license ../../LICENSE --license ../../NOTICE --license ../../$(BIN)/THIRD_PARTY_LICENSES \
		--out ../../$(BIN)/holdfast-image.tar

.PHONY: image-check
image-check: image ## Check the image holds a static, non-root operator entrypoint.
	cd hack/image && $(GO) run . check --image ../../$(BIN)/holdfast-image.tar

.PHONY: release
release: ## Build a release into dist/ (binaries, archives, image index, chart, krew manifest, SHA256SUMS); publishes nothing.
	hack/release.sh $(DIST)

.PHONY: bump
bump: ## Set the release the chart and config/default install: make bump VERSION=v0.2.0.
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$$ ]] || { echo "usage: make bump VERSION=vX.Y.Z"; exit 1; }
	echo $(VERSION) >VERSION
	sed -i -e 's/^version: .*/version: $(patsubst v%,%,$(VERSION))/' -e 's/^appVersion: .*/appVersion: "$(VERSION)"/' charts/holdfast/Chart.yaml
	sed -i -e 's|image: ghcr.io/holdfast-dev/holdfast:.*|image: ghcr.io/holdfast-dev/holdfast:$(VERSION)|' config/manager/manager.yaml

.PHONY: testbed-build
testbed-build: build ## Build (or find in the cache) the control plane, etcd and kwok.
	$(TESTBED) build --src hack/testbed

.PHONY: karpenter-build
karpenter-build: ## Build (or find in the cache) Karpenter's kwok provider for the e2e tests (hack/karpenter).
	hack/karpenter/build.sh

.PHONY: cluster-autoscaler-build
cluster-autoscaler-build: ## Build (or find in the cache) cluster-autoscaler's kwok provider for the e2e tests (hack/cluster-autoscaler).
	hack/cluster-autoscaler/build.sh

.PHONY: test-e2e
test-e2e: testbed-build karpenter-build cluster-autoscaler-build ## End-to-end tests: each package starts its own testbed.
	HOLDFAST_TESTBED=$(abspath $(TESTBED)) HOLDFAST_KARPENTER=$$(hack/karpenter/build.sh) HOLDFAST_CLUSTER_AUTOSCALER=$$(hack/cluster-autoscaler/build.sh) $(TOOL) gotestsum --format testname $(if $(E2E_JSONFILE),--jsonfile $(E2E_JSONFILE)) -- \
		-tags e2e -count=1 -p $(E2E_PARALLEL) -parallel $(E2E_TESTS_PARALLEL) -timeout $(E2E_TIMEOUT) $(addprefix ./test/e2e/,$(E2E_FIRST)) ./test/e2e/...

.PHONY: bench
bench: ## The benchmarks behind docs/engineering/performance.md, `holdfast audit` run as a user runs it among them: figures written to bin/go-Benchmark*.json, a missed target fails.
	mkdir -p $(BIN) && HOLDFAST_BENCH_DIR=$(abspath $(BIN)) $(GO) test -run '^$$' -bench . -benchmem -cpu 1 ./internal/...

SCALE ?= 1
CHURN ?= 10m
.PHONY: bench-scale
bench-scale: testbed-build ## holdfast on a testbed of 1,000 nodes and 50,000 pods (SCALE=0.1 for a tenth, CHURN=10m): prints every figure with its command, writes them to bin/bench-scale.json; a missed target fails.
	HOLDFAST_TESTBED=$(abspath $(TESTBED)) HOLDFAST_BENCH_DIR=$(abspath $(BIN)) HOLDFAST_BIN=$(abspath $(BIN)/holdfast) HOLDFAST_SCALE=$(SCALE) HOLDFAST_CHURN=$(CHURN) \
		$(GO) test -tags scale -count=1 -v -timeout 80m -run TestScale ./test/scale/

.PHONY: bench-speed
bench-speed: testbed-build ## kubectl drain against holdfast's on 12 nodes: figures written to bin/bench-speed.json; a missed target fails.
	HOLDFAST_TESTBED=$(abspath $(TESTBED)) HOLDFAST_BENCH_DIR=$(abspath $(BIN)) \
		$(GO) test -tags e2e -count=1 -v -timeout 20m ./test/e2e/drain/speed/

.PHONY: bench-failure
bench-failure: build testbed-build ## A node's crash, its proof, its return and a zone's crash, Kubernetes alone and with holdfast (its time: docs/engineering/performance.md): figures printed and written to bin/bench-failure.json, the whole log to bin/bench-failure.log.
	HOLDFAST_TESTBED=$(abspath $(TESTBED)) HOLDFAST_BENCH_FAILURE=1 HOLDFAST_BENCH_DIR=$(abspath $(BIN)) \
		$(GO) test -tags e2e -count=1 -v -timeout 40m -run TestBenchFailure ./test/e2e/nodefailure/ 2>&1 | tee $(BIN)/bench-failure.log | grep -E '^(=== RUN|--- |ok|FAIL)|_test.go:'

.PHONY: lint
lint: ## gofmt, go vet and staticcheck.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n $$out ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...
	$(GO) vet -tags scale ./test/scale/
	$(TOOL) staticcheck ./...
	cd hack/testbed && $(GO) vet ./...
	cd hack/image && $(GO) vet ./...
	cd hack/monitoring && $(GO) vet ./...
	$(TOOL) actionlint .github/workflows/*.yaml

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs and RBAC from the markers.
	hack/generate.sh

.PHONY: verify
verify: generate lint ## Tidy, generate and lint, then fail if anything changed.
	$(GO) mod tidy
	cd hack/testbed && $(GO) mod tidy
	cd hack/image && $(GO) mod tidy
	cd hack/monitoring && $(GO) mod tidy
	cd hack/karpenter && GOTOOLCHAIN=go$$(awk '$$1 == "go" {print $$2}' go.mod) $(GO) mod tidy
	git diff --exit-code

.PHONY: demo
demo: build testbed-build ## Start a 6-node testbed and walk through the misconfigurations.
	hack/demo.sh

.PHONY: testbed-up
testbed-up: build ## Start a testbed (NODES, ZONES, TESTBED_DIR) and leave it running.
	$(TESTBED) up --src hack/testbed --dir $(TESTBED_DIR) --nodes $(NODES) --zones $(ZONES)
	@echo "export KUBECONFIG=$(TESTBED_DIR)/kubeconfig"

.PHONY: testbed-down
testbed-down: ## Stop the testbed started by testbed-up.
	$(TESTBED) down --dir $(TESTBED_DIR)

.PHONY: help
help: ## This list.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'
