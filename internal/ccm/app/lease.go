package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DefaultLeaderElectRetryPeriod is our --leader-elect-retry-period
// (upstream's is 2s). A standby tries the Lease every 1 to 2.2 retry
// periods (client-go adds up to 120% jitter), so a Lease released on
// SIGTERM is taken over within 1.76 s; the leader renews as often, about
// one Lease update per second.
const DefaultLeaderElectRetryPeriod = 800 * time.Millisecond

// releaseTimeout bounds the Lease release on SIGTERM, so an unreachable
// API server does not hold the process: the standby then waits for the
// lease to expire, as after SIGKILL.
const releaseTimeout = 3 * time.Second

// leaseRelease hands leadership over when the process is asked to stop.
// Upstream's app runs leader election on a context that is never
// cancelled and without ReleaseOnCancel, so a stopped leader would leave
// its Lease to expire (--leader-elect-lease-duration, 15 s) before the
// standby takes over. On SIGTERM or SIGINT this stops our own
// controllers, empties the Lease's holder if this process holds it (as
// client-go's ReleaseOnCancel would) and exits. A SIGKILLed leader cannot:
// its standby still waits for the lease duration.
type leaseRelease struct {
	// client, namespace and name are the Lease's; client is nil when
	// there is no leader election (nothing to release, default signal
	// handling).
	client          kubernetes.Interface
	namespace, name string

	mu sync.Mutex
	// holder is this process's identity once it acquired the Lease; ""
	// before. Upstream makes the identity up inside its Run and tells it
	// only in the "<identity> became leader" event (leaderRecorder).
	holder string
	// cancels stop the controllers started while leading.
	cancels  []context.CancelFunc
	stopping bool
}

// configure sets up the release for the completed configuration and
// handles the stop signals from now on; without leader election on a
// Lease it does nothing.
func (r *leaseRelease) configure(c *ccmconfig.CompletedConfig) error {
	le := c.ComponentConfig.Generic.LeaderElection
	if !le.LeaderElect {
		return nil
	}
	if le.ResourceLock != resourcelock.LeasesResourceLock {
		klog.InfoS("The leader-election lock is not a Lease; it is not released on SIGTERM", "lock", le.ResourceLock)
		return nil
	}
	// A client of its own: the release must not queue behind the
	// controllers' writes under their client's rate limit.
	client, err := kubernetes.NewForConfig(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("client for the leader-election Lease: %w", err)
	}
	r.client, r.namespace, r.name = client, le.ResourceNamespace, le.ResourceName
	// Run creates the lock with this recorder after we return.
	c.EventRecorder = &leaderRecorder{EventRecorder: c.EventRecorder, r: r}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go r.onSignals(signals)
	return nil
}

// onSignals stops the process on the first signal, releasing the Lease;
// a second signal exits at once.
func (r *leaseRelease) onSignals(signals <-chan os.Signal) {
	sig := <-signals
	klog.InfoS("Stopping: releasing the leader-election Lease if held", "signal", sig.String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.stop()
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		if err := r.release(ctx); err != nil {
			klog.ErrorS(err, "Leader-election Lease not released; the standby takes over when it expires")
		}
	}()
	select {
	case <-done:
		klog.FlushAndExit(klog.ExitFlushTimeout, 0)
	case sig := <-signals:
		klog.InfoS("Second signal: exiting without releasing the Lease", "signal", sig.String())
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

// lead is called by each of our controllers when it starts (upstream
// starts them once this process leads): it returns ctx cancelled when the
// process stops, so they stop before the Lease is released.
func (r *leaseRelease) lead(ctx context.Context) context.Context {
	if r.client == nil {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		cancel()
		return ctx
	}
	r.cancels = append(r.cancels, cancel)
	return ctx
}

// acquired records this process's identity as the Lease's holder.
func (r *leaseRelease) acquired(identity string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holder = identity
}

// leaderRecorder passes events through and learns from the leader
// election's "<identity> became leader" event on our Lease that this
// process holds it, and under which identity.
type leaderRecorder struct {
	record.EventRecorder
	r *leaseRelease
}

// Eventf implements record.EventRecorder; the lock records its
// transitions with it.
func (l *leaderRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if lease, ok := object.(*coordinationv1.Lease); ok && reason == "LeaderElection" &&
		lease.Namespace == l.r.namespace && lease.Name == l.r.name {
		if id, ok := strings.CutSuffix(fmt.Sprintf(messageFmt, args...), " became leader"); ok && id != "" {
			l.r.acquired(id)
		}
	}
	l.EventRecorder.Eventf(object, eventtype, reason, messageFmt, args...)
}

// stop cancels the controllers started while leading, and those that
// start later.
func (r *leaseRelease) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	for _, c := range r.cancels {
		c()
	}
}

// release empties the Lease's holder if this process holds it, so the
// standby acquires it at its next try instead of after the lease
// duration. The update carries the resourceVersion read, so a Lease
// another replica took meanwhile is left alone.
func (r *leaseRelease) release(ctx context.Context) error {
	r.mu.Lock()
	holder := r.holder
	r.mu.Unlock()
	if r.client == nil || holder == "" {
		return nil
	}
	leases := r.client.CoordinationV1().Leases(r.namespace)
	l, err := leases.Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the Lease %s/%s: %w", r.namespace, r.name, err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		klog.InfoS("The Lease is held by another replica; nothing to release", "holder", ptr.Deref(l.Spec.HolderIdentity, ""))
		return nil
	}
	now := metav1.NewMicroTime(time.Now())
	l.Spec = coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To(""), LeaseDurationSeconds: ptr.To[int32](1),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: l.Spec.LeaseTransitions,
	}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("release the Lease %s/%s: %w", r.namespace, r.name, err)
	}
	klog.InfoS("Released the leader-election Lease", "lease", r.namespace+"/"+r.name, "holder", holder)
	return nil
}

// leading wraps a controller constructor so that the controller runs on
// a context the stop signal cancels (lead).
func leading(r *leaseRelease, c ccmapp.ControllerInitFuncConstructor) ccmapp.ControllerInitFuncConstructor {
	construct := c.Constructor
	c.Constructor = func(initCtx ccmapp.ControllerInitContext, cfg *ccmconfig.CompletedConfig, cp cloudprovider.Interface) ccmapp.InitFunc {
		init := construct(initCtx, cfg, cp)
		return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			return init(r.lead(ctx), cctx)
		}
	}
	return c
}
