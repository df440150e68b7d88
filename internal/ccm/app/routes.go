package app

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	alicloud "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// routeControllerSpec is our route controller: on with
// --configure-cloud-routes and a --cluster-cidr.
var routeControllerSpec = ownController{
	name: names.NodeRouteController, clientName: "route-controller",
	enabled: func(cfg *ccmconfig.CompletedConfig) bool {
		shared := cfg.ComponentConfig.KubeCloudShared
		if !shared.ConfigureCloudRoutes {
			klog.InfoS("Not configuring VPC routes", "configureCloudRoutes", false)
			return false
		}
		if shared.ClusterCIDR == "" {
			klog.InfoS("Not configuring VPC routes: --cluster-cidr is empty")
			return false
		}
		return true
	},
	build: func(b *built, cfg *ccmconfig.CompletedConfig, client kubernetes.Interface, recorder record.EventRecorder) (func(context.Context), error) {
		shared := cfg.ComponentConfig.KubeCloudShared
		rc, err := newRouteController(b.cloud, client, cfg.SharedInformers, recorder, shared.ClusterCIDR, shared.RouteReconciliationPeriod.Duration)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { rc.Run(ctx, 1) }, nil
	},
}

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
