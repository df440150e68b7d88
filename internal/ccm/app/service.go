package app

import (
	"context"
	"fmt"
	"os"
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

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
)

func init() {
	// Our service controller replaces the generic one under the same name
	// (alias "service"), so --controllers keeps working as users expect.
	ownControllers[names.ServiceLBController] = ccmapp.ControllerInitFuncConstructor{
		InitContext: ccmapp.ControllerInitContext{ClientName: "service-controller"},
		Constructor: startService,
	}
}

// serviceController satisfies controller.Interface for the app framework.
type serviceController struct{}

// Name returns the controller name.
func (serviceController) Name() string { return names.ServiceLBController }

func startService(initCtx ccmapp.ControllerInitContext, cfg *ccmconfig.CompletedConfig, cp cloudprovider.Interface) ccmapp.InitFunc {
	return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		cloud, ok := cp.(*provider.Cloud)
		if !ok {
			return nil, false, fmt.Errorf("service controller needs the %s provider, got %T", provider.Name, cp)
		}
		client := cfg.ClientBuilder.ClientOrDie(initCtx.ClientName)
		broadcaster := record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartStructuredLogging(3)
		// Events go through a client (and so a --kube-api-qps budget) of
		// their own: on the Services' client they took a share of its
		// rate in a burst and delayed their addresses (docs/performance.md).
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.ClientBuilder.ClientOrDie(initCtx.ClientName).CoreV1().Events("")})
		recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "service-controller"})
		sc, err := newServiceController(cloud, client, cfg.SharedInformers, recorder, int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs))
		if err != nil || sc == nil {
			return nil, false, err
		}
		go sc.Run(ctx)
		return serviceController{}, true, nil
	}
}

// newServiceController builds the service controller the CCM runs, and
// the one the plan command drives: nil when every load balancer kind is
// left to others.
func newServiceController(cloud *provider.Cloud, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, workersFlag int) (*service.Controller, error) {
	c := cloud.Config
	clbProvider, err := clb.New(clb.Options{
		Cloud: cloud.Client, VpcID: c.VpcID, VSwitchIDs: c.VSwitchIDs, DisablePublic: c.DisablePublicSLB,
	})
	if err != nil {
		return nil, err
	}
	nlbProvider, err := nlb.New(nlb.Options{Cloud: cloud.Client, VpcID: c.VpcID})
	if err != nil {
		return nil, err
	}
	var providers []service.Provider
	if !cloud.Options.DisableCLB {
		providers = append(providers, clbProvider)
	}
	if !cloud.Options.DisableNLB {
		providers = append(providers, nlbProvider)
	}
	if len(providers) == 0 {
		return nil, nil
	}
	klog.InfoS("Service controller load balancer kinds", "clb", !cloud.Options.DisableCLB, "nlb", !cloud.Options.DisableNLB)
	return service.New(service.Options{
		KubeClient: client,
		Informers:  factory,
		Recorder:   recorder,
		Providers:  providers,
		ClusterID:  c.ClusterID,
		Defaults: annotations.Defaults{
			ResourceGroupID:            c.ResourceGroupID,
			BackendType:                annotations.DefaultBackendType(os.LookupEnv, c.ServiceBackendType),
			LoadBalancerTypeAnnotation: c.FeatureGates["LoadBalancerTypeAnnotation"],
		},
		Workers:     cloud.ServiceWorkers(workersFlag),
		ENIs:        service.CloudENIs{Client: cloud.Client, VpcID: c.VpcID},
		ReusePolicy: c.LoadBalancerReuse,
		// A 0s flag means off; the controller's zero means its default.
		NodeBatchWindow:  nonZero(cloud.Options.NodeBatchWindow),
		NodeBatchMaxWait: nonZero(cloud.Options.NodeBatchMaxWait),
	})
}

// nonZero maps an explicit 0s flag to the negative "off" of the service
// controller's options, where zero means the default.
func nonZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
