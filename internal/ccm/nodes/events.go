package nodes

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// RecordEvents sends the lookups' events through client, as the
// cloud-controller-manager component, until stop is closed.
func (s *Instances) RecordEvents(client kubernetes.Interface, stop <-chan struct{}) {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	s.SetRecorder(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cloud-controller-manager"}))
	go func() {
		<-stop
		broadcaster.Shutdown()
	}()
}
