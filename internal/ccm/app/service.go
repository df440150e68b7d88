package app

import (
	"os"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/clb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
)

// serviceOptions are the service controller's flags.
type serviceOptions struct {
	// NodeBatchWindow and NodeBatchMaxWait are its coalescing of Node
	// changes (--node-batch-window, --node-batch-max-wait; 0s: off).
	NodeBatchWindow, NodeBatchMaxWait time.Duration
	// DisableCLB and DisableNLB leave Services of that kind to others: the
	// existing CCM's --controllers without "service" or "nlb".
	DisableCLB, DisableNLB bool
	// WorkersFlagSet says --concurrent-service-syncs was given, so it wins
	// over cloud-config serviceMaxConcurrentReconciles.
	WorkersFlagSet bool
}

// defaultServiceOptions are the service controller's settings before
// flags, shared by the CCM and its plan command.
func defaultServiceOptions() serviceOptions {
	return serviceOptions{NodeBatchWindow: service.DefaultNodeBatchWindow, NodeBatchMaxWait: service.DefaultNodeBatchMaxWait}
}

// serviceWorkers is how many Services are reconciled at once: an explicit
// --concurrent-service-syncs (flag), else cloud-config
// serviceMaxConcurrentReconciles, else the flag's default.
func serviceWorkers(cfg *config.Config, o serviceOptions, flag int) int {
	if !o.WorkersFlagSet && cfg.ServiceMaxConcurrentReconciles > 0 {
		return cfg.ServiceMaxConcurrentReconciles
	}
	return flag
}

// eventsPerWorker is how many entries of the service controller's event
// correlator (client-go record.CorrelatorOptions.LRUCacheSize) each worker
// gets. The correlator keeps three LRU caches of that size (the spam
// filter's token bucket per object, the aggregator's similar events per
// object and reason, the logger's last Event per identical event, so a
// repeat is a count patch), and with client-go's 4,096 entries each they
// filled with one entry per Service that recorded anything and held ~7 MB
// at W4 5,000 (docs/performance.md). What they fold is a Service's events
// repeated over its own syncs; each sync records two or three events, so
// 64 per worker folds the repeats of a Service whose syncs are no more
// than ~20 of that worker's syncs apart. Older repeats cost a new Event
// object instead of a count patch, and the spam filter's burst starts
// again for the Service; the controller's own warnOnce keeps repeated
// Warnings to one per change or resync either way.
const eventsPerWorker = 64

// serviceEventCache is the correlator size for workers workers.
func serviceEventCache(workers int) int {
	return eventsPerWorker * max(1, workers)
}

// newServiceController builds the service controller the CCM runs, and
// the one the plan command drives: nil when every load balancer kind is
// left to others.
func newServiceController(cloud *provider.Cloud, o serviceOptions, client kubernetes.Interface, factory informers.SharedInformerFactory, recorder record.EventRecorder, workersFlag int) (*service.Controller, error) {
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
	if !o.DisableCLB {
		providers = append(providers, clbProvider)
	}
	if !o.DisableNLB {
		providers = append(providers, nlbProvider)
	}
	if len(providers) == 0 {
		return nil, nil
	}
	klog.InfoS("Service controller load balancer kinds", "clb", !o.DisableCLB, "nlb", !o.DisableNLB)
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
		Workers:     serviceWorkers(c, o, workersFlag),
		ENIs:        service.CloudENIs{Client: cloud.Client, VpcID: c.VpcID},
		ReusePolicy: c.LoadBalancerReuse,
		// The grant of certificates whose tags cannot be read (NLB).
		CertificateGrants: c.CertificateGrants,
		// A 0s flag means off; the controller's zero means its default.
		NodeBatchWindow:  nonZero(o.NodeBatchWindow),
		NodeBatchMaxWait: nonZero(o.NodeBatchMaxWait),
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
