// Package deploytest proves the manifests in deploy/: every file parses into
// valid objects, the Deployment's flags are the binary's, and the
// cloud-controller-manager binary, run with a kubeconfig holding a token of
// the ServiceAccount that deploy/rbac.yaml defines (and nothing else:
// bootstrap bindings to the same identities are removed first), initializes
// Nodes, programs routes and serves LoadBalancer Services without a single
// forbidden request.
package deploytest
