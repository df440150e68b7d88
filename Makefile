# alicloud-ccm: the cloud controller manager, the emulated cloud, the sandbox.
SHELL := /bin/bash
GO ?= go
GOTEST_TIMEOUT ?= 18m

# Stamped into every binary (--version) by `make build`.
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT ?= $(shell c=$$(git rev-parse --short HEAD 2>/dev/null) || c=unknown; git diff --quiet HEAD -- 2>/dev/null || c=$$c-dirty; echo $$c)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/alicloud-ccm/alicloud-ccm/internal/version
LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).BuildDate=$(DATE)

.PHONY: all build image controlplane helm test race unit lint fmt-check fuzz sandbox bench bench-quick bench-plots soak soak-bug screenshots clean

all: build

## build: compile every binary into bin/, stamped with VERSION, COMMIT and DATE (--version)
build:
	@echo "==> building binaries into bin/ ($(VERSION), commit $(COMMIT))"
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

# `make image`: the build time of the images is the commit's (reproducible
# digests); the revision label is the full commit.
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
REVISION ?= $(shell r=$$(git rev-parse HEAD 2>/dev/null) || r=unknown; git diff --quiet HEAD -- 2>/dev/null || r=$$r-dirty; echo $$r)

## image: OCI image layouts (multi-arch index) and docker archives of the CCM and the emulator in _output/images, without Docker
image:
	@echo "==> building images into _output/images ($(VERSION), commit $(COMMIT), $(IMAGE_PLATFORMS))"
	$(GO) run ./hack/image --out _output/images --platforms $(IMAGE_PLATFORMS) --version $(VERSION) --commit $(COMMIT) --revision $(REVISION) --created @$(SOURCE_DATE_EPOCH) --docker-archive

## controlplane: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from source (cached)
controlplane:
	@hack/controlplane.sh

## helm: build helm from the module pinned in hack/helm (cached; the chart's tests build it when missing)
helm:
	@hack/helm.sh

## fmt-check: fail when a Go file is not gofmt-formatted
fmt-check:
	@echo "==> gofmt"
	@out="$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## lint: gofmt and the full go vet (go test runs vet's high-confidence checks itself)
lint: fmt-check
	@echo "==> go vet"
	$(GO) vet ./...

## unit: unit tests only (no control plane)
unit:
	$(GO) test -short -count=1 ./...

## test: unit and integration tests against a local control plane and the emulator, then the race pass (make race)
# ALICLOUD_TEST_RUN marks every process this run starts (they inherit it),
# so that the orphan check flags those only, not a sandbox running beside.
test: export ALICLOUD_TEST_RUN := $(shell date +%s%N)-$(shell echo $$PPID)
# The tests get a temp dir of their own (TMPDIR): after a passing run it
# must be empty, and it is removed; after a failing one it is kept, as it
# holds the failed tests' component logs.
test: controlplane helm fmt-check
	@set -e; tmp="$$(mktemp -d "$${TMPDIR:-/tmp}/alicloud-test.XXXXXX")"; export TMPDIR="$$tmp"; \
	keep() { echo "==> tests failed; their temp files are kept in $$tmp"; exit 1; }; \
	echo "==> go test (unit + integration; each test binary starts its own local cluster when it needs one)"; \
	echo "$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) ./..."; \
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) ./... || keep; \
	$(MAKE) --no-print-directory race || keep; \
	echo "==> checking that no process started by the tests is left running"; \
	hack/check-no-orphans.sh; \
	hack/check-no-leftovers.sh "$$tmp"

## screenshots: rewrite docs/images/console-*.png from the web console's browser test (needs Chromium)
screenshots:
	CONSOLE_SCREENSHOTS=1 $(GO) test -count=1 -run '^TestConsoleInChromium$$' -v ./internal/emulator/console/

# RACE_PKGS are the packages whose concurrent code runs inside their test
# binaries: the cloud client, the node index, the route controller (run
# in-process against a local cluster) and the service controller and its
# providers. The service package's integration tests drive a CCM process,
# which -race does not instrument, so under -short it runs its white-box
# tests only (localcluster.RunProcessTests); servicecosttest only drives that
# process and is left out; -short also skips the cloud package's 40 s of
# quota runs.
RACE_PKGS ?= ./internal/cloud/... ./internal/ccm/nodes/... ./internal/ccm/routes/... ./internal/ccm/service/ \
	./internal/ccm/service/clb/... ./internal/ccm/service/nlb/... ./internal/testing/verifytest/

## race: the race detector over RACE_PKGS (part of make test; ~1.5 min with a warm build cache)
race: controlplane
	@echo "==> go test -race (packages with concurrent code in their test binaries)"
	$(GO) test -race -short -count=1 -timeout $(GOTEST_TIMEOUT) $(RACE_PKGS)

## fuzz: run every fuzz target for FUZZTIME each (go test -fuzz takes one target per run); new failing inputs land in the package's testdata/fuzz/
FUZZTIME ?= 60s
FUZZFLAGS ?=
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd); do \
		dir=./$$(dirname $$f); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "==> $$dir $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$dir; \
		done; \
	done

## sandbox: run a local cluster with the CCM on the emulated cloud
sandbox: controlplane
	$(GO) run ./cmd/sandbox up --dir .sandbox

## bench: the scale benchmark (W1-W4, route burst) at the issue's sizes, published quotas compressed x20 (NLB x1): ~23 min; tables and bench-results/*.json (docs/performance.md)
bench: controlplane
	$(GO) run ./cmd/bench --out bench-results $(BENCH_FLAGS)

## soak: the CCM under fire for 15 min (2 replicas, leader SIGKILLs, cloud faults, an API-server restart, 60 s of cloud timeouts), then the invariant checker; soak-results/soak.json (docs/reliability.md)
soak: controlplane
	$(GO) run ./cmd/soak --out soak-results/soak.json $(SOAK_FLAGS)

## soak-bug: the quick soak with --inject-bug (the cloud answers the CCM's ACL deletions with success and keeps the lists); it must exit 1 naming the leak
soak-bug: controlplane
	@mkdir -p bin
	$(GO) build -o bin/soak ./cmd/soak
	bin/soak --quick --inject-bug --out soak-results/soak-bug.json $(SOAK_FLAGS); rc=$$?; if [[ $$rc -ne 1 ]]; then echo "soak-bug: want exit 1 (violations found), got $$rc"; exit 1; fi

## bench-plots: redraw the SVG charts of docs/bench-results/*.json (make bench writes them beside its own JSON)
bench-plots:
	$(GO) run ./cmd/bench --plot docs/bench-results

## bench-quick: every benchmark scenario small (a few minutes, no target asserted)
bench-quick: controlplane
	$(GO) run ./cmd/bench --quick --out bench-results/quick $(BENCH_FLAGS)

clean:
	rm -rf bin .sandbox _output bench-results soak-results
