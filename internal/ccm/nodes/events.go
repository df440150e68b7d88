package nodes

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// NodeEventCacheSize sizes the correlator caches of recorders whose
// events are about Nodes, one or two per Node (the lookups', the route
// controller's).
// client-go's default, 4,096 entries in each of three caches, fills at
// 2,000 Nodes (an Initialized and a LabelsSynced event each) and held
// ~3 MB of the CCM's heap (the benchmark's W4) for events that never
// repeat: the caches only turn a repeat of an event on the same Node into
// a count patch (and keep its spam filter's bucket), and a Node's repeated SyncFailed comes every node status
// pass, after far fewer than this many other events when few Nodes fail.
const NodeEventCacheSize = 256

// RecordEvents sends the lookups' events through client, as the
// cloud-controller-manager component, until stop is closed.
func (s *Instances) RecordEvents(client kubernetes.Interface, stop <-chan struct{}) {
	broadcaster := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: NodeEventCacheSize}))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	s.SetRecorder(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cloud-controller-manager"}))
	go func() {
		<-stop
		broadcaster.Shutdown()
	}()
}
