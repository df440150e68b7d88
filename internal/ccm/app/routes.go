package app

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	alicloud "github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

func init() {
	// Our route controller replaces the generic one under the same name
	// (alias "route"), so --controllers keeps working as users expect.
	ownControllers[names.NodeRouteController] = ccmapp.ControllerInitFuncConstructor{
		InitContext: ccmapp.ControllerInitContext{ClientName: "route-controller"},
		Constructor: startRoutes,
	}
}

// namedController satisfies controller.Interface for the app framework.
type namedController string

// Name returns the controller name.
func (n namedController) Name() string { return string(n) }

func startRoutes(initCtx ccmapp.ControllerInitContext, cfg *ccmconfig.CompletedConfig, cp cloudprovider.Interface) ccmapp.InitFunc {
	return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		shared := cfg.ComponentConfig.KubeCloudShared
		if !shared.ConfigureCloudRoutes {
			klog.InfoS("Not configuring VPC routes", "configureCloudRoutes", false)
			return nil, false, nil
		}
		if shared.ClusterCIDR == "" {
			klog.InfoS("Not configuring VPC routes: --cluster-cidr is empty")
			return nil, false, nil
		}
		cloud, ok := cp.(*provider.Cloud)
		if !ok {
			return nil, false, fmt.Errorf("route controller needs the %s provider, got %T", provider.Name, cp)
		}
		client := cfg.ClientBuilder.ClientOrDie(initCtx.ClientName)
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartStructuredLogging(3)
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "route-controller"})
		rc, err := newRouteController(cloud, client, cfg.SharedInformers, recorder, shared.ClusterCIDR, shared.RouteReconciliationPeriod.Duration)
		if err != nil {
			return nil, false, err
		}
		go rc.Run(ctx, 1)
		return namedController(names.NodeRouteController), true, nil
	}
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
