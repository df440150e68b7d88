//go:build tools

// Package tools pins the Helm release that the chart's tests and `make helm`
// build from source; a module of its own so that its pins never change the
// key of the control-plane cache (hack/tools), nor the product's go.mod.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
