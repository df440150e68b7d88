package app

import (
	"context"

	v1 "k8s.io/api/core/v1"
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

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/nodes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
)

// built is what the command's cloud initializer makes for our
// controllers: the provider and each controller's own options. The app
// framework runs the initializer before any controller constructor, so
// the constructors read the provider from here rather than asking the
// cloudprovider.Interface they are handed what it is.
type built struct {
	cloud   *provider.Cloud
	service serviceOptions
}

// ownController is one of our controllers as the app framework starts it.
type ownController struct {
	// name is its --controllers name; clientName names its Kubernetes
	// client and is the source of its events.
	name, clientName string
	// eventsClient gives its events a client (and so a --kube-api-qps
	// budget) of their own.
	eventsClient bool
	// enabled says whether the configuration runs it (nil: always).
	enabled func(cfg *ccmconfig.CompletedConfig) bool
	// eventCache sizes its event recorder's correlator caches (nil or 0:
	// client-go's 4,096 entries).
	eventCache func(b *built, cfg *ccmconfig.CompletedConfig) int
	// build makes it; a nil run with no error leaves it off.
	build func(b *built, cfg *ccmconfig.CompletedConfig, client kubernetes.Interface, recorder record.EventRecorder) (run func(context.Context), err error)
}

// ownControllers replace the generic service and route controllers under
// their names (aliases "service" and "route"), so --controllers keeps
// working as users expect.
var ownControllers = []ownController{serviceControllerSpec, routeControllerSpec}

// serviceControllerSpec is our service controller; its events go
// through a client of their own: on the Services' client they took a
// share of its rate in a burst and delayed their addresses
// (docs/performance.md).
var serviceControllerSpec = ownController{
	name: names.ServiceLBController, clientName: "service-controller", eventsClient: true,
	eventCache: func(b *built, cfg *ccmconfig.CompletedConfig) int {
		return serviceEventCache(serviceWorkers(b.cloud.Config, b.service, int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs)))
	},
	build: func(b *built, cfg *ccmconfig.CompletedConfig, client kubernetes.Interface, recorder record.EventRecorder) (func(context.Context), error) {
		sc, err := newServiceController(b.cloud, b.service, client, cfg.SharedInformers, recorder, int(cfg.ComponentConfig.ServiceController.ConcurrentServiceSyncs))
		if err != nil || sc == nil {
			return nil, err
		}
		return sc.Run, nil
	},
}

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
	// Its events are one per Node and route (Created, Adopted): sized
	// as the Node lookups' are.
	eventCache: func(*built, *ccmconfig.CompletedConfig) int { return nodes.NodeEventCacheSize },
	build: func(b *built, cfg *ccmconfig.CompletedConfig, client kubernetes.Interface, recorder record.EventRecorder) (func(context.Context), error) {
		shared := cfg.ComponentConfig.KubeCloudShared
		rc, err := newRouteController(b.cloud, client, cfg.SharedInformers, recorder, shared.ClusterCIDR, shared.RouteReconciliationPeriod.Duration)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) { rc.Run(ctx, 1) }, nil
	},
}

// namedController satisfies controller.Interface for the app framework.
type namedController string

// Name returns the controller name.
func (n namedController) Name() string { return string(n) }

// constructor is the app framework's starter of o: its client, an event
// recorder on it, then o's controller running on the init context.
func (o ownController) constructor(b *built) ccmapp.ControllerInitFuncConstructor {
	return ccmapp.ControllerInitFuncConstructor{
		InitContext: ccmapp.ControllerInitContext{ClientName: o.clientName},
		Constructor: func(initCtx ccmapp.ControllerInitContext, cfg *ccmconfig.CompletedConfig, _ cloudprovider.Interface) ccmapp.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				if o.enabled != nil && !o.enabled(cfg) {
					return nil, false, nil
				}
				client := cfg.ClientBuilder.ClientOrDie(initCtx.ClientName)
				events := client
				if o.eventsClient {
					events = cfg.ClientBuilder.ClientOrDie(initCtx.ClientName)
				}
				var correlator record.CorrelatorOptions
				if o.eventCache != nil {
					correlator.LRUCacheSize = o.eventCache(b, cfg)
				}
				broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(correlator))
				broadcaster.StartStructuredLogging(3)
				broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})
				recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: o.clientName})
				run, err := o.build(b, cfg, client, recorder)
				if err != nil || run == nil {
					return nil, false, err
				}
				go run(ctx)
				return namedController(o.name), true, nil
			}
		},
	}
}

// controllers are the upstream node controllers plus ours; the generic
// service and route controllers are replaced, not used. Ours stop on
// SIGTERM before the Lease is released (lease).
func controllers(lease *leaseRelease, b *built) map[string]ccmapp.ControllerInitFuncConstructor {
	out := map[string]ccmapp.ControllerInitFuncConstructor{}
	for name, c := range ccmapp.DefaultInitFuncConstructors {
		switch name {
		case names.CloudNodeController:
			out[name] = withLabelSync(c, b)
		case names.CloudNodeLifecycleController:
			out[name] = c
		}
	}
	for _, o := range ownControllers {
		out[o.name] = leading(lease, o.constructor(b))
	}
	return out
}
