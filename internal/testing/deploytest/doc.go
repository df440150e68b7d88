// Package deploytest proves the manifests in deploy/ and the Helm chart in
// charts/alicloud-ccm: every file parses into valid objects, the
// Deployment's flags are the binary's, the chart with deploy/-equivalent
// values renders deploy/'s objects and its other value sets pass the API
// server's dry run, and the cloud-controller-manager binary, run with a
// kubeconfig holding a token of the ServiceAccount that deploy/rbac.yaml
// (and, in a second run, the chart's rendered RBAC) defines, and nothing
// else (bootstrap bindings to the same identities are removed first),
// initializes Nodes, programs routes and serves LoadBalancer Services
// without a single forbidden request.
package deploytest
