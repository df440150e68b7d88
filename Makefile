# alicloud-ccm: the cloud controller manager, the emulated cloud, the sandbox.
SHELL := /bin/bash
GO ?= go
GOTEST_TIMEOUT ?= 18m

.PHONY: all build controlplane test unit lint fmt-check sandbox clean

all: build

## build: compile every binary into bin/
build:
	@echo "==> building binaries into bin/"
	@mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

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

clean:
	rm -rf bin .sandbox
