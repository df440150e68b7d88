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

.PHONY: all build controlplane test unit lint fmt-check sandbox bench bench-quick clean

all: build

## build: compile every binary into bin/, stamped with VERSION, COMMIT and DATE (--version)
build:
	@echo "==> building binaries into bin/ ($(VERSION), commit $(COMMIT))"
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

## controlplane: build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from source (cached)
controlplane:
	@hack/controlplane.sh

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

## test: unit and integration tests against a local control plane and the emulator
test: controlplane fmt-check
	@echo "==> go test (unit + integration; each test binary starts its own local cluster when it needs one)"
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) ./...
	@echo "==> checking that no process started by the tests is left running"
	@hack/check-no-orphans.sh

## sandbox: run a local cluster with the CCM on the emulated cloud
sandbox: controlplane
	$(GO) run ./cmd/sandbox up --dir .sandbox

## bench: the scale benchmark (W1-W4, route burst) on the quota profile; tables and bench-results/*.json (docs/performance.md)
bench: controlplane
	$(GO) run ./cmd/bench --out bench-results $(BENCH_FLAGS)

## bench-quick: every benchmark scenario small (a few minutes, no target asserted)
bench-quick: controlplane
	$(GO) run ./cmd/bench --quick --out bench-results/quick $(BENCH_FLAGS)

clean:
	rm -rf bin .sandbox bench-results
