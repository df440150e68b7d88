package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// lbKind runs an ownership test against one load balancer kind.
type lbKind struct {
	name    string
	product string
	// userLB creates a load balancer the way a user would (no CCM tags,
	// protections on) with extra tags, and returns its id.
	userLB func(t *testing.T, tags map[string]string) string
	// exists reports whether the load balancer exists.
	exists func(t *testing.T, id string) bool
	// protected reports whether its delete protection is on.
	protected func(t *testing.T, id string) bool
	// service makes a Service of this kind.
	service func(t *testing.T, name string, ann map[string]string) *corev1.Service
	// tagged lists the load balancers tagged for svc.
	tagged func(t *testing.T, svc *corev1.Service) []string
}

func kinds(t *testing.T) []lbKind {
	_, zones := clusterNetwork(t)
	return []lbKind{
		{
			name: "clb", product: "slb",
			userLB: func(t *testing.T, tags map[string]string) string {
				cr := slb.CreateCreateLoadBalancerRequest()
				cr.LoadBalancerName, cr.LoadBalancerSpec, cr.DeleteProtection = "users-own", "slb.s1.small", "on"
				var ts []slb.CreateLoadBalancerTag
				for k, v := range tags {
					ts = append(ts, slb.CreateLoadBalancerTag{Key: k, Value: v})
				}
				cr.Tag = &ts
				lb, err := slbClient(t).CreateLoadBalancer(cr)
				if err != nil {
					t.Fatal(err)
				}
				return lb.LoadBalancerId
			},
			exists: func(t *testing.T, id string) bool { _, ok := describeLB(t, id); return ok },
			protected: func(t *testing.T, id string) bool {
				lb, ok := describeLB(t, id)
				return ok && lb.DeleteProtection == "on"
			},
			service: func(t *testing.T, name string, ann map[string]string) *corev1.Service {
				return newService(svcSpec{name: name, ports: []int32{80}, annotations: ann})
			},
			tagged: func(t *testing.T, svc *corev1.Service) []string {
				tags, _ := json.Marshal([]map[string]string{{"TagKey": naming.TagKeyDefaultName, "TagValue": naming.DefaultLBName(svc)}})
				r := slb.CreateDescribeLoadBalancersRequest()
				r.Tags = string(tags)
				resp, err := slbClient(t).DescribeLoadBalancers(r)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, lb := range resp.LoadBalancers.LoadBalancer {
					out = append(out, lb.LoadBalancerId)
				}
				return out
			},
		},
		{
			name: "nlb", product: "nlb",
			userLB: func(t *testing.T, tags map[string]string) string {
				vpcID, _ := clusterNetwork(t)
				r := nlb.CreateCreateLoadBalancerRequest()
				r.AddressType, r.VpcId, r.LoadBalancerName = "Internet", vpcID, "users-own"
				r.DeletionProtectionConfig.Enabled = "true"
				var zm []nlb.CreateLoadBalancerZoneMappings
				for _, z := range zones {
					zone, vsw, _ := strings.Cut(z, ":")
					zm = append(zm, nlb.CreateLoadBalancerZoneMappings{ZoneId: zone, VSwitchId: vsw})
				}
				r.ZoneMappings = &zm
				var ts []nlb.CreateLoadBalancerTag
				for k, v := range tags {
					ts = append(ts, nlb.CreateLoadBalancerTag{Key: k, Value: v})
				}
				r.Tag = &ts
				lb, err := nlbClient(t).CreateLoadBalancer(r)
				if err != nil {
					t.Fatal(err)
				}
				return lb.LoadbalancerId
			},
			exists: nlbLBExists,
			protected: func(t *testing.T, id string) bool {
				r := nlb.CreateGetLoadBalancerAttributeRequest()
				r.LoadBalancerId = id
				resp, err := nlbClient(t).GetLoadBalancerAttribute(r)
				return err == nil && resp.DeletionProtectionConfig.Enabled
			},
			service: nlbService,
			tagged: func(t *testing.T, svc *corev1.Service) []string {
				r := nlb.CreateListLoadBalancersRequest()
				r.Tag = &[]nlb.ListLoadBalancersTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(svc)}}
				resp, err := nlbClient(t).ListLoadBalancers(r)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, lb := range resp.LoadBalancers {
					out = append(out, lb.LoadBalancerId)
				}
				return out
			},
		},
	}
}

func create(t *testing.T, svc *corev1.Service) *corev1.Service {
	t.Helper()
	out, err := kube(t).CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setLabel(t *testing.T, name, key, value string) {
	t.Helper()
	updateService(t, name, func(s *corev1.Service) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[key] = value
	})
}

// TestLabelAttack: a user who sets the loadbalancer-id label of their own
// Service to someone else's load balancer (at creation, and again just
// before deleting the Service) makes the CCM neither write to nor delete
// it: the label is ignored with a Warning, the Service gets its own load
// balancer, and deleting the Service deletes only that one.
func TestLabelAttack(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			seq := lastSeq()
			victim := k.userLB(t, nil)
			name := "attack-label-" + k.name
			svc := k.service(t, name, nil)
			svc.Labels = map[string]string{naming.LabelLoadBalancerID: victim}
			create(t, svc)
			waitEvent(t, name, service.EventNotOwned, victim)
			got := waitIngress(t, name, 90*time.Second)
			own := lbID(got)
			if own == victim || own == "" {
				t.Fatalf("Service bound to %q, victim %s", own, victim)
			}
			// The label points at the victim again when the Service goes.
			setLabel(t, name, naming.LabelLoadBalancerID, victim)
			deleteService(t, name)
			if !k.exists(t, victim) || !k.protected(t, victim) {
				t.Fatalf("victim %s deleted or unprotected", victim)
			}
			if w := writesOn(k.product, seq, victim); len(w) > 0 {
				t.Fatalf("writes on the victim: %v", actions(w))
			}
			if k.exists(t, own) {
				t.Fatalf("the Service's own load balancer %s was not deleted", own)
			}
		})
	}
}

// TestRemovedIDAnnotation: a Service that reused a user's load balancer
// through the id annotation and then drops the annotation is refused (a
// load balancer of its own would strand its listeners on the user's): no
// write and no new load balancer; deleting the Service then leaves the
// user's load balancer in place and protected.
func TestRemovedIDAnnotation(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			user := k.userLB(t, nil)
			name := "removed-id-" + k.name
			create(t, k.service(t, name, map[string]string{annotations.Key("id"): user}))
			got := waitIngress(t, name, 90*time.Second)
			if lbID(got) != user {
				t.Fatalf("label %q, want %s", lbID(got), user)
			}
			seq := lastSeq()
			updateService(t, name, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("id")) })
			// Refused: an own load balancer now would strand the Service's
			// listeners on the borrowed one.
			waitEvent(t, name, service.EventReuseRefused, user)
			if s := getService(t, name); lbID(s) != user {
				t.Fatalf("label %q after the refused removal, want %s", lbID(s), user)
			}
			if w := writesOn(k.product, seq, user); len(w) > 0 {
				t.Fatalf("writes on the user's load balancer after the id annotation went: %v", actions(w))
			}
			deleteService(t, name)
			if !k.exists(t, user) || !k.protected(t, user) {
				t.Fatalf("user load balancer %s deleted or unprotected", user)
			}
		})
	}
}

// otherVPCLB creates an intranet CLB in a VPC other than the cluster's.
func otherVPCLB(t *testing.T) string {
	t.Helper()
	c := vpcClient(t)
	vr := vpc.CreateCreateVpcRequest()
	vr.CidrBlock, vr.VpcName = "172.30.0.0/16", "other"
	v, err := c.CreateVpc(vr)
	if err != nil {
		t.Fatal(err)
	}
	_, zones := clusterNetwork(t)
	zone, _, _ := strings.Cut(zones[0], ":")
	var vsw string
	poll(t, 30*time.Second, "vSwitch in the other VPC", func(ctx context.Context) (bool, error) {
		sr := vpc.CreateCreateVSwitchRequest()
		sr.VpcId, sr.CidrBlock, sr.ZoneId = v.VpcId, "172.30.1.0/24", zone
		s, err := c.CreateVSwitch(sr)
		if err != nil {
			return false, nil // the VPC may still be Pending
		}
		vsw = s.VSwitchId
		return true, nil
	})
	var id string
	poll(t, 30*time.Second, "CLB in the other VPC", func(ctx context.Context) (bool, error) {
		cr := slb.CreateCreateLoadBalancerRequest()
		cr.LoadBalancerName, cr.LoadBalancerSpec, cr.AddressType, cr.VpcId, cr.VSwitchId = "other-vpc", "slb.s1.small", "intranet", v.VpcId, vsw
		lb, err := slbClient(t).CreateLoadBalancer(cr)
		if err != nil {
			return false, nil
		}
		id = lb.LoadBalancerId
		return true, nil
	})
	return id
}

// TestReuseRefused: the id annotation is refused, with a Warning and no
// change to the cloud or the Service, for a load balancer a CCM created for
// another Service, the cluster's API server load balancer (cluster tag),
// one in another VPC (CLB), one of another address type or resource group
// than the annotations say. Deleting the refused Service completes.
func TestReuseRefused(t *testing.T) {
	t.Parallel()
	ks := kinds(t)
	type tc struct {
		name  string
		kind  lbKind
		lb    func(t *testing.T) string
		extra map[string]string
		want  string
	}
	var cases []tc
	for _, k := range ks {
		cases = append(cases,
			tc{"other-service-" + k.name, k, func(t *testing.T) string {
				return k.userLB(t, map[string]string{naming.TagKeyDefaultName: "a0123456789abcdef0123456789abcde", naming.TagKeyCluster: clusterID})
			}, nil, "created by a cloud controller manager"},
			tc{"apiserver-" + k.name, k, func(t *testing.T) string {
				return k.userLB(t, map[string]string{naming.TagKeyCluster: clusterID})
			}, nil, "cluster tag"},
			tc{"address-type-" + k.name, k, func(t *testing.T) string { return k.userLB(t, nil) },
				map[string]string{annotations.Key("address-type"): "intranet"}, "is internet"},
		)
	}
	cases = append(cases,
		tc{"other-vpc-clb", ks[0], otherVPCLB, nil, "not the cluster's VPC"},
		tc{"resource-group-clb", ks[0], func(t *testing.T) string { return ks[0].userLB(t, nil) },
			map[string]string{annotations.Key("resource-group-id"): "rg-aek2someotherone"}, "resource group"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := c.lb(t)
			seq := lastSeq()
			name := "refuse-" + c.name
			ann := map[string]string{annotations.Key("id"): id, annotations.Key("force-override-listeners"): "true"}
			for k, v := range c.extra {
				ann[k] = v
			}
			create(t, c.kind.service(t, name, ann))
			ev := waitEvent(t, name, service.EventReuseRefused, id)
			if !strings.Contains(ev.Message, c.want) {
				t.Errorf("event %q does not say %q", ev.Message, c.want)
			}
			got := getService(t, name)
			if len(got.Finalizers) > 0 || lbID(got) != "" || len(got.Status.LoadBalancer.Ingress) > 0 {
				t.Errorf("refused Service changed: finalizers %v label %q status %v", got.Finalizers, lbID(got), got.Status.LoadBalancer.Ingress)
			}
			deleteService(t, name)
			if w := writesOn(c.kind.product, seq, id); len(w) > 0 {
				t.Fatalf("writes on the refused load balancer: %v", actions(w))
			}
			if !c.kind.exists(t, id) {
				t.Fatalf("refused load balancer %s deleted", id)
			}
		})
	}
}

// TestRepointRefused: adding the id annotation to a Service that has its
// own load balancer, or changing it on one that reuses another, is refused
// (the old one would leak); setting it back resumes, and delete completes
// with the own load balancer deleted and the user's untouched.
func TestRepointRefused(t *testing.T) {
	t.Parallel()
	k := kinds(t)[0]
	user1, user2 := k.userLB(t, nil), k.userLB(t, nil)
	const ownName, reuseName = "repoint-own", "repoint-reuse"
	create(t, k.service(t, ownName, nil))
	create(t, k.service(t, reuseName, map[string]string{annotations.Key("id"): user1}))
	own := lbID(waitIngress(t, ownName, 60*time.Second))
	if got := lbID(waitIngress(t, reuseName, 60*time.Second)); got != user1 {
		t.Fatalf("reuse label %q", got)
	}
	seq := lastSeq()
	updateService(t, ownName, func(s *corev1.Service) { s.Annotations = map[string]string{annotations.Key("id"): user2} })
	updateService(t, reuseName, func(s *corev1.Service) { s.Annotations[annotations.Key("id")] = user2 })
	waitEvent(t, ownName, service.EventReuseRefused, own)
	waitEvent(t, reuseName, service.EventReuseRefused, user1)
	if w := writesOn(k.product, seq, user2, own, user1); len(w) > 0 {
		t.Fatalf("writes after a refused re-point: %v", actions(w))
	}
	if got := lbID(getService(t, ownName)); got != own {
		t.Fatalf("label moved to %q", got)
	}
	updateService(t, ownName, func(s *corev1.Service) { delete(s.Annotations, annotations.Key("id")) })
	waitIngress(t, ownName, 30*time.Second)
	deleteService(t, ownName)
	deleteService(t, reuseName)
	if k.exists(t, own) {
		t.Fatalf("own load balancer %s not deleted", own)
	}
	for _, u := range []string{user1, user2} {
		if !k.exists(t, u) || !k.protected(t, u) {
			t.Fatalf("user load balancer %s deleted or unprotected", u)
		}
	}
}

// TestSwitchKindThenDelete: a Service moved from CLB to NLB (type
// annotation) and back releases the load balancer of the kind it leaves,
// with that kind's finalizer, before the new one is ensured; deleting it
// then completes and leaves nothing tagged for it.
func TestSwitchKindThenDelete(t *testing.T) {
	t.Parallel()
	ks := kinds(t)
	_, zones := clusterNetwork(t)
	const name = "switch-kind"
	svc := create(t, ks[0].service(t, name, nil))
	first := lbID(waitIngress(t, name, 60*time.Second))
	wantKind := func(prefix, fin string) string {
		var id string
		poll(t, 90*time.Second, name+" on "+prefix, func(ctx context.Context) (bool, error) {
			s := getService(t, name)
			id = lbID(s)
			return strings.HasPrefix(id, prefix) && len(s.Finalizers) == 1 && s.Finalizers[0] == fin &&
				s.Labels[naming.LabelHash] == naming.Hash(s) && len(s.Status.LoadBalancer.Ingress) > 0, nil
		})
		return id
	}
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations = map[string]string{annotations.LoadBalancerTypeKey: "nlb", annotations.Key("zone-maps"): strings.Join(zones, ",")}
	})
	second := wantKind("nlb-", naming.FinalizerNLB)
	if ks[0].exists(t, first) {
		t.Fatalf("CLB %s left behind after the switch to NLB", first)
	}
	updateService(t, name, func(s *corev1.Service) { s.Annotations = nil })
	third := wantKind("lb-", naming.FinalizerCLB)
	if ks[1].exists(t, second) {
		t.Fatalf("NLB %s left behind after the switch back", second)
	}
	deleteService(t, name)
	if ks[0].exists(t, third) {
		t.Fatalf("CLB %s not deleted", third)
	}
	for _, k := range ks {
		if left := k.tagged(t, svc); len(left) > 0 {
			t.Fatalf("%s load balancers still tagged for the Service: %v", k.name, left)
		}
	}
}

// TestLostCreateResponse: a create whose response is lost after the cloud
// applied it (emulator fault drop, after) leaves exactly one load balancer
// and one group per port: the load balancer create replays its UID-derived
// ClientToken, and the group create (no token) is retried only after a
// read shows it absent.
func TestLostCreateResponse(t *testing.T) {
	for _, k := range kinds(t) {
		for _, action := range map[string][]string{"clb": {"CreateLoadBalancer", "CreateVServerGroup"}, "nlb": {"CreateLoadBalancer", "CreateServerGroup"}}[k.name] {
			t.Run(k.name+"-"+action, func(t *testing.T) {
				rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: k.product, Action: action, Drop: true, After: true, Count: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer cloud.Gateway.RemoveFault(rule.ID)
				name := strings.ToLower("lost-" + k.name + "-" + action)
				svc := create(t, k.service(t, name, nil))
				id := lbID(waitIngress(t, name, 90*time.Second))
				if f := firedOf(rule.ID); f != 1 {
					t.Fatalf("fault fired %d times", f)
				}
				if got := k.tagged(t, svc); len(got) != 1 || got[0] != id {
					t.Fatalf("load balancers tagged for the Service: %v, label %s", got, id)
				}
				switch k.name {
				case "clb":
					if g := groupMembers(t, id); len(g) != 1 {
						t.Fatalf("vServer groups: %v", keys(g))
					}
				case "nlb":
					if g := nlbGroups(t, svc); len(g) != 1 {
						t.Fatalf("server groups: %v", keys(g))
					}
				}
				deleteService(t, name)
			})
		}
	}
}

// firedOf is how often a fault rule fired; it counts as fired-out once it
// was removed for reaching its count.
func firedOf(id string) int {
	for _, r := range cloud.Gateway.Faults() {
		if r.ID == id {
			return r.Fired
		}
	}
	return 1
}

// TestInvalidAnnotationKeepsBackends: while a Service's load balancer
// annotations are invalid its load balancer settings stay frozen (Warning
// InvalidAnnotation), but a Node that stops being eligible still leaves
// its backends; and deleting the Service still completes.
func TestInvalidAnnotationKeepsBackends(t *testing.T) {
	const name = "invalid-backends"
	create(t, newService(svcSpec{name: name, ports: []int32{80}}))
	id := lbID(waitIngress(t, name, 60*time.Second))
	before, _ := describeLB(t, id)
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations = map[string]string{annotations.Key("bandwidth"): "lots", annotations.Key("spec"): "slb.s3.large"}
	})
	waitEvent(t, name, service.EventInvalid, "bandwidth")
	node := nodeNames[len(nodeNames)-1]
	setNodeLabel(t, node, "node.kubernetes.io/exclude-from-external-load-balancers", "true")
	defer setNodeLabel(t, node, "node.kubernetes.io/exclude-from-external-load-balancers", "")
	poll(t, 30*time.Second, "node leaves the backends", func(ctx context.Context) (bool, error) {
		for _, m := range groupMembers(t, id) {
			if _, ok := m[instances[node]]; ok {
				return false, nil
			}
			return len(m) == len(nodeNames)-1, nil
		}
		return false, nil
	})
	after, _ := describeLB(t, id)
	if after.LoadBalancerSpec != before.LoadBalancerSpec {
		t.Fatalf("spec changed from %s to %s while the annotations are invalid", before.LoadBalancerSpec, after.LoadBalancerSpec)
	}
	deleteService(t, name)
	if _, ok := describeLB(t, id); ok {
		t.Fatalf("load balancer %s not deleted", id)
	}
}

func setNodeLabel(t *testing.T, node, key, value string) {
	t.Helper()
	var patch string
	if value == "" {
		patch = `{"metadata":{"labels":{"` + key + `":null}}}`
	} else {
		patch = `{"metadata":{"labels":{"` + key + `":"` + value + `"}}}`
	}
	if _, err := kube(t).CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lbTags reads a load balancer's tags through ListTagResources.
func lbTags(t *testing.T, k lbKind, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	switch k.name {
	case "clb":
		r := slb.CreateListTagResourcesRequest()
		r.ResourceType, r.ResourceId = "instance", &[]string{id}
		resp, err := slbClient(t).ListTagResources(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range resp.TagResources.TagResource {
			out[tr.TagKey] = tr.TagValue
		}
	case "nlb":
		r := nlb.CreateListTagResourcesRequest()
		r.ResourceType, r.ResourceId = "loadbalancer", &[]string{id}
		resp, err := nlbClient(t).ListTagResources(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range resp.TagResources {
			out[tr.TagKey] = tr.TagValue
		}
	}
	return out
}

func userTag(t *testing.T, k lbKind, id, key, value string) {
	t.Helper()
	switch k.name {
	case "clb":
		r := slb.CreateTagResourcesRequest()
		r.ResourceType, r.ResourceId, r.Tag = "instance", &[]string{id}, &[]slb.TagResourcesTag{{Key: key, Value: value}}
		if _, err := slbClient(t).TagResources(r); err != nil {
			t.Fatal(err)
		}
	case "nlb":
		r := nlb.CreateTagResourcesRequest()
		r.ResourceType, r.ResourceId, r.Tag = "loadbalancer", &[]string{id}, &[]nlb.TagResourcesTag{{Key: key, Value: value}}
		if _, err := nlbClient(t).TagResources(r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdditionalTagsBothWays: tags follow additional-resource-tags both
// ways on our own load balancer: a changed value is set, a key dropped
// from the annotation is removed (UntagResources), a tag the user added
// in the console and our own tags stay.
func TestAdditionalTagsBothWays(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			name := "tags-" + k.name
			key := annotations.Key("additional-resource-tags")
			create(t, k.service(t, name, map[string]string{key: "team=a,env=prod"}))
			id := lbID(waitIngress(t, name, 90*time.Second))
			if got := lbTags(t, k, id); got["team"] != "a" || got["env"] != "prod" {
				t.Fatalf("tags after create: %v", got)
			}
			userTag(t, k, id, "console", "x")
			wantTags := func(what string, want map[string]string, gone ...string) {
				poll(t, 60*time.Second, what, func(ctx context.Context) (bool, error) {
					got := lbTags(t, k, id)
					for kk, v := range want {
						if got[kk] != v {
							return false, nil
						}
					}
					for _, g := range gone {
						if _, ok := got[g]; ok {
							return false, nil
						}
					}
					return true, nil
				})
			}
			updateService(t, name, func(s *corev1.Service) { s.Annotations[key] = "team=b" })
			wantTags("env removed, team changed", map[string]string{"team": "b", "console": "x", naming.TagKeyCluster: clusterID}, "env")
			updateService(t, name, func(s *corev1.Service) { delete(s.Annotations, key) })
			wantTags("annotation's tags removed", map[string]string{"console": "x", naming.TagKeyCluster: clusterID}, "team", naming.TagKeyManaged)
			if got := lbTags(t, k, id); got[naming.TagKeyDefaultName] == "" {
				t.Fatalf("our tag removed: %v", got)
			}
			deleteService(t, name)
		})
	}
}
