package servicecosttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// calls are calls per action of one product.
type calls map[string]int

func (c calls) String() string {
	keys := slices.Sorted(maps.Keys(c))
	parts := make([]string, 0, len(keys))
	total := 0
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
		total += c[k]
	}
	return fmt.Sprintf("%d calls: %s", total, strings.Join(parts, " "))
}

// counters reads the emulator's per-action counters of product.
func counters(product string) calls {
	out := calls{}
	for _, c := range cloud.Counters() {
		if c.Product == product {
			out[c.Action] += c.Calls
		}
	}
	return out
}

// since is the calls of product made after before.
func since(product string, before calls) calls {
	out := calls{}
	for k, v := range counters(product) {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// quiet waits until product has had no call for window, so a sync and any
// pass it triggers (the status and label patches are Service updates) are
// counted whole.
func quiet(t *testing.T, product string, window time.Duration) {
	t.Helper()
	last, lastChange := counters(product), time.Now()
	deadline := time.Now().Add(60 * time.Second)
	for time.Since(lastChange) < window {
		if time.Now().After(deadline) {
			t.Fatalf("%s calls never stopped: %v", product, since(product, last))
		}
		time.Sleep(200 * time.Millisecond)
		if now := counters(product); !maps.Equal(now, last) {
			last, lastChange = now, time.Now()
		}
	}
}

// writes are the actions of c that change the cloud.
func writes(c calls) calls {
	out := calls{}
	for k, v := range c {
		if !strings.HasPrefix(k, "Describe") && !strings.HasPrefix(k, "List") && !strings.HasPrefix(k, "Get") {
			out[k] = v
		}
	}
	return out
}

func service(name string, class *string, ann map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			Selector:          map[string]string{"app": name},
			LoadBalancerClass: class,
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8443)},
			},
		},
	}
}

// waitSynced waits until the Service has an address and the hash of its
// current spec.
func waitSynced(t *testing.T, name string, timeout time.Duration) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	err := wait.PollUntilContextTimeout(ccm.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := kube(t).CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		svc = s
		return len(s.Status.LoadBalancer.Ingress) > 0 && s.Labels[naming.LabelHash] == naming.Hash(s), nil
	})
	if err != nil {
		if crash := ccm.Crashed(); crash != nil {
			t.Fatalf("Service %s not synced: %v", name, crash)
		}
		t.Fatalf("Service %s not synced: %v; CCM log tail:\n%s", name, err, tail(ccm.Log(), 30))
	}
	return svc
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func deleteService(t *testing.T, name string) {
	t.Helper()
	if err := kube(t).CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ccm.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube(t).CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if crash := ccm.Crashed(); crash != nil {
		err = crash
	}
	if err != nil {
		t.Fatalf("Service %s not deleted: %v", name, err)
	}
}

// TestCallsPerServiceMatchTheMinimalPlan: creating a 2-port Service on 25
// Nodes costs exactly the calls of the benchmark's minimal plan (CLB: one
// listing, the create, per port a group created with the first 20
// backends, one add of the other 5, a listener and its start; NLB: one
// listing, the create, one attribute read once Active, per port a group,
// one add and a listener, and 3 job waits) plus, for NLB, one
// ListServerGroups: NLB server groups are the VPC's, not the load
// balancer's, so they can outlive a load balancer deleted out of band and
// must be looked for by tag before creating them (13 calls, 1.08x the
// plan). A full sync with nothing changed afterwards (the hash label
// removed, as a user's edit would) writes nothing.
func TestCallsPerServiceMatchTheMinimalPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		product string
		class   *string
		ann     map[string]string
		plan    calls
	}{
		{
			name: "clb", product: "slb",
			plan: calls{
				"DescribeLoadBalancers": 1, "CreateLoadBalancer": 1,
				"CreateVServerGroup": 2, "AddVServerGroupBackendServers": 2,
				"CreateLoadBalancerTCPListener": 2, "StartLoadBalancerListener": 2,
			},
		},
		{
			name: "nlb", product: "nlb", class: ptr.To(annotations.NLBClass),
			ann: map[string]string{annotations.Key("zone-maps"): strings.Join(seeded.zoneMaps, ",")},
			plan: calls{
				"ListLoadBalancers": 1, "CreateLoadBalancer": 1, "GetLoadBalancerAttribute": 1,
				"CreateServerGroup": 2, "AddServersToServerGroup": 2,
				"CreateListener": 2, "ListAsynJobs": 3,
				"ListServerGroups": 1,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "plan-" + tc.name
			quiet(t, tc.product, time.Second)
			before := counters(tc.product)
			if _, err := kube(t).CoreV1().Services(ns).Create(context.Background(), service(name, tc.class, tc.ann), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer deleteService(t, name)
			waitSynced(t, name, 60*time.Second)
			quiet(t, tc.product, 3*time.Second)
			got := since(tc.product, before)
			t.Logf("create: %v", got)
			if !maps.Equal(got, tc.plan) {
				t.Errorf("creating the Service: %v; the minimal plan is %v", got, tc.plan)
			}

			// A full sync with nothing to change: drop the hash label.
			before = counters(tc.product)
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, naming.LabelHash)
			if _, err := kube(t).CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitSynced(t, name, 30*time.Second)
			quiet(t, tc.product, 3*time.Second)
			again := since(tc.product, before)
			t.Logf("full sync with nothing changed: %v", again)
			if w := writes(again); len(w) > 0 {
				t.Errorf("a full sync with nothing changed wrote %v", w)
			}
			if len(again) == 0 {
				t.Error("the full sync read nothing: it did not run")
			}
		})
	}
}
