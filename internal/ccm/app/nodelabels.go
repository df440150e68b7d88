package app

import (
	"context"

	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
)

// withLabelSync runs the upstream cloud-node controller and, with it and
// under its identity, our periodic resync of the instance-derived Node
// labels every --node-status-update-frequency (the period upstream
// resyncs addresses with; default 5m, the existing CCM's label resync).
// Upstream sets labels only at initialization; being part of the same
// controller, --controllers=-cloud-node-controller turns both off.
func withLabelSync(c ccmapp.ControllerInitFuncConstructor, b *built) ccmapp.ControllerInitFuncConstructor {
	upstream := c.Constructor
	c.Constructor = func(initCtx ccmapp.ControllerInitContext, cfg *ccmconfig.CompletedConfig, cp cloudprovider.Interface) ccmapp.InitFunc {
		start := upstream(initCtx, cfg, cp)
		return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			ctrl, enabled, err := start(ctx, cctx)
			if err != nil || !enabled {
				return ctrl, enabled, err
			}
			informer := cfg.SharedInformers.Core().V1().Nodes()
			client := cfg.ClientBuilder.ClientOrDie(initCtx.ClientName)
			period := cfg.ComponentConfig.NodeStatusUpdateFrequency.Duration
			go b.cloud.Nodes.RunLabelSync(ctx, client, informer.Lister(), informer.Informer().HasSynced, period)
			return ctrl, enabled, nil
		}
	}
	return c
}
