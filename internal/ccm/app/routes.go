package app

import (
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	alicloud "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// newRouteController builds the route controller the CCM runs, and the
// one the plan command drives.
func newRouteController(cloud *provider.Cloud, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, clusterCIDR string, resync time.Duration) (*routes.Controller, error) {
	return routes.New(routes.Options{
		KubeClient:    client,
		NodeInformer:  factory.Core().V1().Nodes(),
		Recorder:      recorder,
		Cloud:         alicloud.VPCRoutes{Client: cloud.Client},
		VpcID:         cloud.Config.VpcID,
		RouteTableIDs: cloud.Config.RouteTableIDs,
		ClusterCIDR:   clusterCIDR,
		ClusterID:     cloud.Config.ClusterID,
		ResyncPeriod:  resync,
	})
}
