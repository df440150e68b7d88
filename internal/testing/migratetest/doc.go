// Package migratetest proves that the existing open-source Alibaba Cloud
// CCM's deployment starts this one unchanged: the cloud-controller-manager
// binary runs with the exact flags of the existing CCM's v2 manifest
// (deploy/v2/cloud-controller-manager.yaml of
// kubernetes/cloud-provider-alibaba-cloud, written here as facts, not a
// copied file) and its JSON cloud-config without clusterID, against a real
// kube-apiserver and the emulator seeded with what the existing CCM left:
// the manifest's plain-HTTP liveness probe passes, the cluster id is
// discovered from the cluster's load balancer and used, Nodes are
// initialized; then with the flags its users pass (--network,
// --controllers=node,route,service,nlb, ignored tuning flags).
package migratetest
