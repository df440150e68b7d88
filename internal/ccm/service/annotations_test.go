package service_test

import (
	"context"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// domains returns domain → certificate of an HTTPS listener's extensions.
func domains(t *testing.T, lbID string, port int) map[string]string {
	t.Helper()
	req := slb.CreateDescribeDomainExtensionsRequest()
	req.LoadBalancerId, req.ListenerPort = lbID, requests.NewInteger(port)
	resp, err := slbClient(t).DescribeDomainExtensions(req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range resp.DomainExtensions.DomainExtension {
		out[d.Domain] = d.ServerCertificateId
	}
	return out
}

// TestDomainExtensions: domain-extensions puts SNI certificates on the
// HTTPS listener; changing the annotation re-points one, deletes a dropped
// domain and creates a new one, with one call each.
func TestDomainExtensions(t *testing.T) {
	t.Parallel()
	name := "domains"
	main, c1, c2 := uploadCert(t), uploadCert(t), uploadCert(t)
	createService(t, svcSpec{name: name, ports: []int32{443}, annotations: map[string]string{
		annotations.Key("protocol-port"):     "https:443",
		annotations.Key("cert-id"):           main,
		annotations.Key("domain-extensions"): "a.example.com:" + c1 + ",*.b.example.com:" + c2,
	}})
	svc := waitIngress(t, name, 30*time.Second)
	id := lbID(svc)
	if got, want := domains(t, id, 443), map[string]string{"a.example.com": c1, "*.b.example.com": c2}; !reflect.DeepEqual(got, want) {
		t.Errorf("domain extensions %v, want %v", got, want)
	}
	seq := lastSeq()
	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("domain-extensions")] = "a.example.com:" + c2 + ",c.example.com:" + c1
	})
	want := map[string]string{"a.example.com": c2, "c.example.com": c1}
	poll(t, 20*time.Second, "domain extensions updated", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(domains(t, id, 443), want), nil
	})
	waitIngress(t, name, 10*time.Second)
	var calls []string
	for _, r := range writesSince(seq) {
		if strings.Contains(r.Action, "DomainExtension") {
			calls = append(calls, r.Action)
		}
	}
	sort.Strings(calls)
	if w := []string{"CreateDomainExtension", "DeleteDomainExtension", "SetDomainExtensionAttribute"}; !reflect.DeepEqual(calls, w) {
		t.Errorf("domain extension writes %v, want %v", calls, w)
	}
	deleteService(t, name)
}

// TestACL: acl-status, acl-id and acl-type put an ACL created through the
// SDK on the listeners; switching the type and turning access control off
// are applied to the existing listeners.
func TestACL(t *testing.T) {
	t.Parallel()
	c := slbClient(t)
	cr := slb.CreateCreateAccessControlListRequest()
	cr.AclName, cr.AddressIPVersion = "svc-acl", "ipv4"
	acl, err := c.CreateAccessControlList(cr)
	if err != nil {
		t.Fatal(err)
	}
	er := slb.CreateAddAccessControlListEntryRequest()
	er.AclId, er.AclEntrys = acl.AclId, `[{"entry":"10.0.0.0/8","comment":"office"}]`
	if _, err := c.AddAccessControlListEntry(er); err != nil {
		t.Fatal(err)
	}
	name := "acl"
	createService(t, svcSpec{name: name, ports: []int32{80, 8080}, protocols: []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}, annotations: map[string]string{
		annotations.Key("acl-status"): "on",
		annotations.Key("acl-id"):     acl.AclId,
		annotations.Key("acl-type"):   "white",
	}})
	id := lbID(waitIngress(t, name, 30*time.Second))
	check := func(what, status, aclID, typ string) {
		t.Helper()
		poll(t, 20*time.Second, what, func(ctx context.Context) (bool, error) {
			ls := listeners(t, id)
			if len(ls) != 2 {
				return false, nil
			}
			for _, l := range ls {
				if l.AclStatus != status || aclID != "" && (l.AclId != aclID || l.AclType != typ) {
					return false, nil
				}
			}
			return true, nil
		})
	}
	check("white list on both listeners", "on", acl.AclId, "white")
	updateService(t, name, func(s *corev1.Service) { s.Annotations[annotations.Key("acl-type")] = "black" })
	check("black list", "on", acl.AclId, "black")
	updateService(t, name, func(s *corev1.Service) { s.Annotations[annotations.Key("acl-status")] = "off" })
	check("access control off", "off", "", "")
	deleteService(t, name)
}

// vswitches returns the cluster VPC's vSwitches, sorted by id.
func vswitches(t *testing.T) []vpc.VSwitch {
	t.Helper()
	req := vpc.CreateDescribeVSwitchesRequest()
	req.VpcId = clusterVPC(t) // tests may seed other VPCs
	req.PageSize = requests.NewInteger(50)
	resp, err := vpcClient(t).DescribeVSwitches(req)
	if err != nil {
		t.Fatal(err)
	}
	out := resp.VSwitches.VSwitch
	sort.Slice(out, func(i, j int) bool { return out[i].VSwitchId < out[j].VSwitchId })
	if len(out) < 2 {
		t.Fatalf("%d vSwitches, want at least 2", len(out))
	}
	return out
}

// TestIntranetAndImmutable: address-type intranet with vswitch-id makes an
// intranet load balancer in that vSwitch; later asking for another address
// type and vSwitch is reported as ImmutableAttributeChanged Warnings
// naming each annotation, is never applied, and the other changes of the
// same edit (a listener setting, the name) still are.
func TestIntranetAndImmutable(t *testing.T) {
	t.Parallel()
	sws := vswitches(t)
	sw, other := sws[len(sws)-1], sws[0]
	name := "intranet"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("address-type"): "intranet",
		annotations.Key("vswitch-id"):   sw.VSwitchId,
	}})
	svc := waitIngress(t, name, 30*time.Second)
	lb, _ := describeLB(t, lbID(svc))
	prefix := netip.MustParsePrefix(sw.CidrBlock)
	if lb.AddressType != "intranet" || lb.VSwitchId != sw.VSwitchId || lb.VpcId != sw.VpcId || lb.NetworkType != "vpc" || !prefix.Contains(netip.MustParseAddr(lb.Address)) {
		t.Errorf("load balancer %s/%s in %s/%s, address %s: want intranet in %s (%s)", lb.AddressType, lb.NetworkType, lb.VpcId, lb.VSwitchId, lb.Address, sw.VSwitchId, sw.CidrBlock)
	}
	if got := svc.Status.LoadBalancer.Ingress; len(got) != 1 || got[0].IP != lb.Address {
		t.Errorf("status %v, want %s", got, lb.Address)
	}

	updateService(t, name, func(s *corev1.Service) {
		s.Annotations[annotations.Key("address-type")] = "internet"
		s.Annotations[annotations.Key("vswitch-id")] = other.VSwitchId
		s.Annotations[annotations.Key("scheduler")] = "wrr"
		s.Annotations[annotations.Key("name")] = "intranet-renamed"
	})
	for _, key := range []string{"address-type", "vswitch-id"} {
		ev := waitEvent(t, name, "ImmutableAttributeChanged", annotations.Key(key))
		if ev.Type != corev1.EventTypeWarning {
			t.Errorf("%s event type %s", key, ev.Type)
		}
	}
	poll(t, 20*time.Second, "mutable settings of the same edit applied", func(ctx context.Context) (bool, error) {
		got, _ := describeLB(t, lb.LoadBalancerId)
		ls := listeners(t, lb.LoadBalancerId)
		return got.LoadBalancerName == "intranet-renamed" && len(ls) == 1 && ls[0].Scheduler == "wrr", nil
	})
	svc = waitIngress(t, name, 10*time.Second)
	got, _ := describeLB(t, lb.LoadBalancerId)
	if got.AddressType != "intranet" || got.VSwitchId != sw.VSwitchId || got.Address != lb.Address {
		t.Errorf("immutable attributes changed: %s %s %s", got.AddressType, got.VSwitchId, got.Address)
	}
	if st := svc.Status.LoadBalancer.Ingress; len(st) != 1 || st[0].IP != lb.Address {
		t.Errorf("status %v, want the unchanged address %s", st, lb.Address)
	}
	deleteService(t, name)
}

// TestProtection: load balancers we create get delete protection and
// ConsoleProtection unless the annotations turn them off; flipping the
// annotations on an existing load balancer applies them, and a protected
// load balancer is still deleted with its Service.
func TestProtection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		ann              map[string]string
		del, mod, reason string
		flip             map[string]string
		flipDel, flipMod string
	}{
		{
			name: "protect-default", del: "on", mod: "ConsoleProtection", reason: "managed.by.ack",
			flip:    map[string]string{annotations.Key("delete-protection"): "off", annotations.Key("modification-protection"): "NonProtection"},
			flipDel: "off", flipMod: "NonProtection",
		},
		{
			name: "protect-off", del: "off", mod: "NonProtection",
			ann:     map[string]string{annotations.Key("delete-protection"): "off", annotations.Key("modification-protection"): "NonProtection"},
			flip:    map[string]string{annotations.Key("delete-protection"): "on", annotations.Key("modification-protection"): "ConsoleProtection"},
			flipDel: "on", flipMod: "ConsoleProtection",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			createService(t, svcSpec{name: tc.name, ports: []int32{80}, annotations: tc.ann})
			id := lbID(waitIngress(t, tc.name, 30*time.Second))
			lb, _ := describeLB(t, id)
			if lb.DeleteProtection != tc.del || lb.ModificationProtectionStatus != tc.mod || lb.ModificationProtectionReason != tc.reason {
				t.Errorf("created with %s/%s (%q), want %s/%s (%q)", lb.DeleteProtection, lb.ModificationProtectionStatus, lb.ModificationProtectionReason, tc.del, tc.mod, tc.reason)
			}
			updateService(t, tc.name, func(s *corev1.Service) {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				for k, v := range tc.flip {
					s.Annotations[k] = v
				}
			})
			poll(t, 20*time.Second, "protections flipped", func(ctx context.Context) (bool, error) {
				lb, _ := describeLB(t, id)
				return lb.DeleteProtection == tc.flipDel && lb.ModificationProtectionStatus == tc.flipMod, nil
			})
			deleteService(t, tc.name)
			if _, ok := describeLB(t, id); ok {
				t.Errorf("load balancer %s survived its Service", id)
			}
		})
	}
}

// instanceByName returns the id of a seeded ECS instance.
func instanceByName(t *testing.T, name string) string {
	t.Helper()
	req := ecs.CreateDescribeInstancesRequest()
	req.InstanceName = name
	resp, err := ecsClient(t).DescribeInstances(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Instances.Instance) != 1 {
		t.Fatalf("%d instances named %s", len(resp.Instances.Instance), name)
	}
	return resp.Instances.Instance[0].InstanceId
}

// TestVGroupPortWithWeight: vgroup-port binds a user's vServer group on a
// reused load balancer; our Nodes join it sharing the weight annotation
// (60 over 10 Nodes = 6 each), the user's member is never touched, the
// listener forwards to the bound group, and deleting the Service removes
// only our members, our listener and nothing else.
func TestVGroupPortWithWeight(t *testing.T) {
	t.Parallel()
	c := slbClient(t)
	cr := slb.CreateCreateLoadBalancerRequest()
	cr.LoadBalancerName, cr.LoadBalancerSpec = "vgroup-user-lb", "slb.s1.small"
	lb, err := c.CreateLoadBalancer(cr)
	if err != nil {
		t.Fatal(err)
	}
	// The CCM's own machine is no Node: a member only the user manages.
	user := instanceByName(t, "svc-node-0")
	gr := slb.CreateCreateVServerGroupRequest()
	gr.LoadBalancerId, gr.VServerGroupName = lb.LoadBalancerId, "user-group"
	gr.BackendServers = `[{"ServerId":"` + user + `","Port":"9000","Weight":"77","Type":"ecs"}]`
	g, err := c.CreateVServerGroup(gr)
	if err != nil {
		t.Fatal(err)
	}
	name := "vgroup"
	createService(t, svcSpec{name: name, ports: []int32{80}, annotations: map[string]string{
		annotations.Key("id"):                       lb.LoadBalancerId,
		annotations.Key("force-override-listeners"): "true",
		annotations.Key("vgroup-port"):              g.VServerGroupId + ":80",
		annotations.Key("weight"):                   "60",
	}})
	svc := waitIngress(t, name, 30*time.Second)
	wantMembers := func(weight int) map[string]int {
		m := map[string]int{user: 77}
		for _, n := range nodeNames {
			m[instances[n]] = weight
		}
		return m
	}
	if got := groupMembers(t, lb.LoadBalancerId); len(got) != 1 || !reflect.DeepEqual(got["user-group"], wantMembers(6)) {
		t.Errorf("groups %v, want only user-group with the user's member at 77 and every Node at 6", got)
	}
	ls := listeners(t, lb.LoadBalancerId)
	if len(ls) != 1 || ls[0].ListenerPort != 80 || ls[0].VServerGroupId != g.VServerGroupId || ls[0].Description != naming.For(svc, clusterID).CLBListener(80) {
		t.Errorf("listeners %+v, want ours on 80 forwarding to %s", ls, g.VServerGroupId)
	}
	updateService(t, name, func(s *corev1.Service) { s.Annotations[annotations.Key("weight")] = "30" })
	poll(t, 20*time.Second, "weights 3 each", func(ctx context.Context) (bool, error) {
		return reflect.DeepEqual(groupMembers(t, lb.LoadBalancerId)["user-group"], wantMembers(3)), nil
	})
	deleteService(t, name)
	if got := groupMembers(t, lb.LoadBalancerId); !reflect.DeepEqual(got, map[string]map[string]int{"user-group": {user: 77}}) {
		t.Errorf("after delete: groups %v, want the user's group with only the user's member", got)
	}
	if ls := listeners(t, lb.LoadBalancerId); len(ls) != 0 {
		t.Errorf("after delete: listeners %+v", ls)
	}
}

// TestIgnoreWeightUpdate: with ignore-weight-update on, a weight changed
// in the cloud survives both the hash-gated backend pass and a full sync
// that changes default-weight; without it both restore the Service's
// weights.
func TestIgnoreWeightUpdate(t *testing.T) {
	t.Parallel()
	for _, ignore := range []bool{true, false} {
		name := "weights-kept"
		if !ignore {
			name = "weights-restored"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ann := map[string]string{}
			if ignore {
				ann[annotations.Key("ignore-weight-update")] = "on"
			}
			createService(t, svcSpec{name: name, ports: []int32{80}, annotations: ann})
			svc := waitIngress(t, name, 30*time.Second)
			id := lbID(svc)
			groupName := naming.For(svc, clusterID).CLBVGroup(itoa(svc.Spec.Ports[0].NodePort))
			gid := groupID(t, id, groupName)
			node := instances[nodeNames[3]]
			sr := slb.CreateSetVServerGroupAttributeRequest()
			sr.VServerGroupId = gid
			sr.BackendServers = `[{"ServerId":"` + node + `","Port":"` + itoa(svc.Spec.Ports[0].NodePort) + `","Weight":"7","Type":"ecs"}]`
			if _, err := slbClient(t).SetVServerGroupAttribute(sr); err != nil {
				t.Fatal(err)
			}
			// The gated pass reads the group; it rewrites the weight only without the annotation.
			seq := lastSeq()
			touch(t, name)
			poll(t, 20*time.Second, "backend pass", func(ctx context.Context) (bool, error) {
				read := false
				for _, r := range cloud.Requests(gateway.RequestFilter{Product: "slb", Action: "DescribeVServerGroupAttribute", AfterSeq: seq}) {
					read = read || r.Params["VServerGroupId"] == gid
				}
				return read && (ignore || groupMembers(t, id)[groupName][node] == 100), nil
			})
			if w := groupMembers(t, id)[groupName][node]; ignore && w != 7 {
				t.Errorf("gated pass: weight %d, want the cloud's 7 kept", w)
			}
			updateService(t, name, func(s *corev1.Service) {
				if s.Annotations == nil {
					s.Annotations = map[string]string{}
				}
				s.Annotations[annotations.Key("default-weight")] = "50"
			})
			want := map[string]int{}
			for _, n := range nodeNames {
				want[instances[n]] = 50
				if ignore {
					want[instances[n]] = 100
				}
			}
			if ignore {
				want[node] = 7
			}
			poll(t, 20*time.Second, "weights after default-weight changed", func(ctx context.Context) (bool, error) {
				s := getService(t, name)
				return s.Labels[naming.LabelHash] == naming.Hash(s) && reflect.DeepEqual(groupMembers(t, id)[groupName], want), nil
			})
			deleteService(t, name)
		})
	}
}

// groupID finds a vServer group of a load balancer by name.
func groupID(t *testing.T, lbID, name string) string {
	t.Helper()
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = lbID
	resp, err := slbClient(t).DescribeVServerGroups(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.VServerGroups.VServerGroup {
		if g.VServerGroupName == name {
			return g.VServerGroupId
		}
	}
	t.Fatalf("no vServer group %s on %s", name, lbID)
	return ""
}
