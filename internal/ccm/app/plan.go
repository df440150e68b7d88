package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/config"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/plan"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/provider"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// planOptions are the plan command's flags.
type planOptions struct {
	kubeconfig, cloudConfig, output, clusterCIDR, network string
	configureRoutes, legacyDefaultClusterID, disableNLB   bool
	timeout                                               time.Duration
}

// newPlanCommand is `cloud-controller-manager plan`: the service and route
// controllers' passes run once, every write recorded instead of made.
// exit receives the exit code of a plan that ran (0 nothing to write, 2
// writes); errors return 1 through the command.
func newPlanCommand(exit func(code int)) *cobra.Command {
	o := planOptions{output: plan.FormatTable, network: provider.NetworkVPC, configureRoutes: true, timeout: 10 * time.Minute}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "List the cloud and Kubernetes writes the CCM would make now, making none",
		Long: `plan reads the cluster and the cloud and runs the service controller's full
sync of every LoadBalancer Service and the route controller's pass once,
with every cloud and Kubernetes write recorded instead of sent. It prints
the writes per Service and per Node (action and the fields it would send)
as a table, or as JSON with -o json. When the cloud config's
loadBalancerReuse is any (the default), it also lists the Services that
loadBalancerReuse: tagged would refuse (borrowed load balancers, vgroup-port
groups and certificates not granted to their namespace).

Exit code: 0 nothing would be written, 2 something would, 1 the plan could
not be made (or a Service's pass failed; its writes up to the failure are
listed). Node initialization is not planned.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := runPlan(cmd.Context(), o, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if code != plan.ExitNoWrites {
				exit(code)
			}
			return nil
		},
	}
	// The parent's help prints the CCM's flag sets; plan has its own.
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		_, err := fmt.Fprintf(c.OutOrStderr(), "Usage:\n  %s\n\nFlags:\n%s", c.UseLine(), c.LocalFlags().FlagUsages())
		return err
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n", c.Long)
		_ = c.Usage()
	})
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to a kubeconfig (empty: in-cluster configuration).")
	fs.StringVar(&o.cloudConfig, "cloud-config", o.cloudConfig, "Path to the cloud-config file the CCM runs with.")
	fs.StringVarP(&o.output, "output", "o", o.output, "Output format: table or json.")
	fs.StringVar(&o.clusterCIDR, "cluster-cidr", o.clusterCIDR, "The CCM's --cluster-cidr; routes are planned only when it is set.")
	fs.BoolVar(&o.configureRoutes, "configure-cloud-routes", o.configureRoutes, "The CCM's --configure-cloud-routes: false leaves routes out of the plan.")
	fs.StringVar(&o.network, NetworkFlag, o.network, "vpc or public endpoints, as the CCM's --network.")
	fs.BoolVar(&o.legacyDefaultClusterID, config.LegacyDefaultClusterIDFlag, o.legacyDefaultClusterID, "As the CCM's flag of the same name.")
	fs.BoolVar(&o.disableNLB, "disable-nlb", o.disableNLB, "Leave NLB Services out, as the CCM run with --controllers without nlb.")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "Bound on the whole plan.")
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	fs.AddGoFlag(gofs.Lookup("v"))
	return cmd
}

// runPlan builds the controllers as the CCM does, over recording clients,
// and renders the report; the code is plan.ExitNoWrites, ExitWrites or
// ExitError.
func runPlan(ctx context.Context, o planOptions, out io.Writer) (int, error) {
	if o.output != plan.FormatTable && o.output != plan.FormatJSON {
		return 0, fmt.Errorf("--output=%q: want %s or %s", o.output, plan.FormatTable, plan.FormatJSON)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// plan.Run marks the controllers' log lines through the contextual
	// logger; this process is the plan alone, so turning it on here
	// changes nothing else.
	klog.EnableContextualLogging(true)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return 0, fmt.Errorf("kubeconfig: %w", err)
	}
	kubeRec := &plan.KubeRecorder{}
	client, err := kubernetes.NewForConfig(kubeRec.Wrap(restCfg))
	if err != nil {
		return 0, fmt.Errorf("kube client: %w", err)
	}
	cloudRec := cloud.NewRecorder(nil)
	popts := defaultProviderOptions()
	popts.Network = o.network
	popts.Kube = client
	popts.LegacyDefaultClusterID = o.legacyDefaultClusterID
	popts.Transport = cloudRec
	cp, err := provider.New(o.cloudConfig, popts)
	if err != nil {
		return 0, fmt.Errorf("cloud configuration: %w", err)
	}
	// A resync period lets the service controller register its own (a
	// factory without one warns); this process ends long before either.
	factory := informers.NewSharedInformerFactory(client, time.Hour)
	events := &plan.Events{}
	sopts := defaultServiceOptions()
	sopts.DisableNLB = o.disableNLB
	sc, err := newServiceController(cp, sopts, client, factory, events, 0)
	if err != nil {
		return 0, fmt.Errorf("service controller: %w", err)
	}
	popt := plan.Options{Cloud: cloudRec, Kube: kubeRec, Events: events, ClusterID: cp.Config.ClusterID}
	if p := cp.Config.LoadBalancerReuse; p == "" || p == service.ReuseAny {
		// What a switch to borrowing by grant would refuse.
		popt.StricterPolicy = service.ReuseTagged
	}
	if sc != nil {
		popt.Services = sc
	}
	if o.configureRoutes && o.clusterCIDR != "" {
		rc, err := newRouteController(cp, client, factory, events, o.clusterCIDR, 0)
		if err != nil {
			return 0, fmt.Errorf("route controller: %w", err)
		}
		popt.Routes = rc
	}
	popt.NodeOfInstance = nodeOfInstance(factory.Core().V1().Nodes().Lister())
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // runs before Shutdown, which waits for the informers
	report, err := plan.Run(ctx, popt)
	if err != nil {
		return 0, err
	}
	if err := plan.Render(out, report, o.output); err != nil {
		return 0, err
	}
	if code := report.ExitCode(); code != plan.ExitError {
		return code, nil
	}
	return 0, errors.New("some items could not be planned; see their errors above")
}

// nodeOfInstance names the Node of an ECS instance from the lister, ""
// when there is none.
func nodeOfInstance(nodes corelisters.NodeLister) func(id string) string {
	return func(id string) string {
		all, err := nodes.List(labels.Everything())
		if err != nil {
			return ""
		}
		for _, n := range all {
			if _, inst, err := providerid.Parse(n.Spec.ProviderID); err == nil && inst == id {
				return n.Name
			}
		}
		return ""
	}
}

// exitProcess ends the process with code after flushing the logs; the
// plan command's 2 cannot go through cobra, which knows only errors.
func exitProcess(code int) {
	klog.Flush()
	os.Exit(code)
}
