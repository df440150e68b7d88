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
