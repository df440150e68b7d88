package nlb_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	sdknlb "github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

const (
	vpcID     = "vpc-k8s"
	clusterID = "c-nlb"
	zoneH     = "cn-hangzhou-h"
	zoneI     = "cn-hangzhou-i"
	zoneMaps  = zoneH + ":vsw-h," + zoneI + ":vsw-i"
	// provisioning outlasts one Ensure's group work, so the first Ensure
	// of a new load balancer always meets it Provisioning.
	provisioning = 400 * time.Millisecond
	jobDelay     = 20 * time.Millisecond
)

var instances = []string{"i-node1", "i-node2", "i-node3"}

// fixture is an emulator with the cluster network seeded, a cloud client
// and the provider under test pointed at it.
type fixture struct {
	t   *testing.T
	env *emulatortest.Env
	sdk *sdknlb.Client
	p   *nlb.Provider
	ctx context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith lets a test change the provider options.
func newFixtureWith(t *testing.T, set func(*nlb.Options)) *fixture {
	t.Helper()
	env := emulatortest.Start(t)
	st := env.Emulator.Store.Settings()
	emulatortest.NoError(t, st.SetDelay(store.DelayNLBProvisioning, provisioning))
	emulatortest.NoError(t, st.SetDelay(store.DelayNLBJob, jobDelay))
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: vpcID, CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{
			{ID: "vsw-h", ZoneID: zoneH, CIDRBlock: "192.168.1.0/24"},
			{ID: "vsw-i", ZoneID: zoneI, CIDRBlock: "192.168.2.0/24"},
			{ID: "vsw-j", ZoneID: "cn-hangzhou-j", CIDRBlock: "192.168.3.0/24"},
		}}},
		SecurityGroups: []api.SeedSecurityGroup{{ID: "sg-one", VpcID: vpcID}, {ID: "sg-two", VpcID: vpcID}},
		Instances: []api.SeedInstance{
			{ID: instances[0], VSwitchID: "vsw-h", PrivateIP: "192.168.1.11", SecondaryENIs: []api.SeedENI{{ID: "eni-pods1", PrivateIPs: []string{"192.168.1.100", "192.168.1.101"}}}},
			{ID: instances[1], VSwitchID: "vsw-i", PrivateIP: "192.168.2.12", SecondaryENIs: []api.SeedENI{{ID: "eni-pods2", PrivateIPs: []string{"192.168.2.100"}}}},
			{ID: instances[2], VSwitchID: "vsw-h", PrivateIP: "192.168.1.13"},
		},
	})
	c, err := cloud.New(cloud.Options{
		Region:      env.Region,
		Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials(emulatortest.AccessKeyID, emulatortest.AccessKeySecret, "", time.Time{})},
		Endpoints:   cloud.Endpoints{ECS: env.Endpoint, VPC: env.Endpoint, SLB: env.Endpoint, NLB: env.Endpoint, Scheme: "HTTP"},
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, QPS: 1000, Burst: 1000,
	})
	emulatortest.NoError(t, err)
	opts := nlb.Options{Cloud: c, VpcID: vpcID, JobPollInterval: 10 * time.Millisecond, JobTimeout: 5 * time.Second}
	if set != nil {
		set(&opts)
	}
	p, err := nlb.New(opts)
	emulatortest.NoError(t, err)
	return &fixture{t: t, env: env, sdk: env.NLB(t), p: p, ctx: context.Background()}
}

// svc is an NLB Service named name with one TCP port 80 (nodePort 30080)
// and the given annotation suffixes.
func svc(name string, ann map[string]string) *corev1.Service {
	class := annotations.NLBClass
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("0b6f0c8e-" + name + "-4c55-9a37-" + strconv.Itoa(len(name)) + "f1e2d3c4b5a6"), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	s.Annotations[annotations.Key("zone-maps")] = zoneMaps
	for k, v := range ann {
		if strings.Contains(k, "/") {
			s.Annotations[k] = v
		} else {
			s.Annotations[annotations.Key(k)] = v
		}
	}
	return s
}

// request builds the provider request: every port served by the given
// instances on its nodePort with weight 100 (weights overrides by instance).
func request(t *testing.T, s *corev1.Service, nodes []string, weights map[string]int) *service.Request {
	t.Helper()
	settings, err := annotations.Parse(s, annotations.Defaults{Owner: annotations.OwnerNLB})
	emulatortest.NoError(t, err)
	b := map[int32][]service.Target{}
	for _, sp := range s.Spec.Ports {
		for _, n := range nodes {
			w := 100
			if v, ok := weights[n]; ok {
				w = v
			}
			b[sp.Port] = append(b[sp.Port], service.Target{NodeName: "node-" + n, InstanceID: n, Port: sp.NodePort, Weight: w})
		}
	}
	return &service.Request{Service: s, Settings: settings, Backends: b, ClusterID: clusterID, Identity: service.IdentityOf(s, clusterID)}
}

// ensure runs Ensure until it stops asking for a retry (at most 20 times)
// and returns the result; the hint label is updated as the controller does.
func (f *fixture) ensure(req *service.Request) *service.Result {
	f.t.Helper()
	for i := 0; i < 20; i++ {
		res, err := ensureBound(f.ctx, f.p, req)
		var retry *service.RetryError
		// As the controller does: requeue while the cloud is busy or still
		// throttling after the client's own retries ran out.
		if errors.As(err, &retry) || cloud.ClassOf(err) == cloud.ClassConflict || cloud.ClassOf(err) == cloud.ClassThrottled {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		emulatortest.NoError(f.t, err)
		req.LoadBalancerID = res.LoadBalancerID
		return res
	}
	f.t.Fatal("Ensure never converged")
	return nil
}

// mark returns the sequence number of the last logged call.
func (f *fixture) mark() uint64 {
	all := f.env.Emulator.Requests()
	if len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Seq
}

// callsSince counts reads and writes after a mark, with the writes by action.
func (f *fixture) callsSince(seq uint64) (reads, writes int, byAction map[string]int) {
	byAction = map[string]int{}
	for _, r := range f.env.Emulator.Requests(gateway.RequestFilter{AfterSeq: seq}) {
		if api.IsReadOnlyAction(r.Action) {
			reads++
			continue
		}
		writes++
		byAction[r.Action]++
	}
	return reads, writes, byAction
}

func (f *fixture) getLB(id string) *sdknlb.GetLoadBalancerAttributeResponse {
	f.t.Helper()
	r := sdknlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	resp, err := f.sdk.GetLoadBalancerAttribute(r)
	emulatortest.NoError(f.t, err)
	return resp
}

func (f *fixture) lbExists(id string) bool {
	r := sdknlb.CreateGetLoadBalancerAttributeRequest()
	r.LoadBalancerId = id
	_, err := f.sdk.GetLoadBalancerAttribute(r)
	return err == nil
}

func (f *fixture) listeners(lbID string) []sdknlb.ListenerInfo {
	f.t.Helper()
	r := sdknlb.CreateListListenersRequest()
	r.LoadBalancerIds = &[]string{lbID}
	r.MaxResults = requests.NewInteger(100)
	resp, err := f.sdk.ListListeners(r)
	emulatortest.NoError(f.t, err)
	sort.Slice(resp.Listeners, func(i, j int) bool { return resp.Listeners[i].ListenerPort < resp.Listeners[j].ListenerPort })
	return resp.Listeners
}

// groupsOf lists the server groups tagged for the Service.
func (f *fixture) groupsOf(s *corev1.Service) []sdknlb.ServerGroup {
	f.t.Helper()
	r := sdknlb.CreateListServerGroupsRequest()
	r.Tag = &[]sdknlb.ListServerGroupsTag{{Key: naming.TagKeyDefaultName, Value: naming.DefaultLBName(s)}}
	r.MaxResults = requests.NewInteger(100)
	resp, err := f.sdk.ListServerGroups(r)
	emulatortest.NoError(f.t, err)
	sort.Slice(resp.ServerGroups, func(i, j int) bool {
		return resp.ServerGroups[i].ServerGroupName < resp.ServerGroups[j].ServerGroupName
	})
	return resp.ServerGroups
}

// servers returns "id:port/weight" of a group's members, sorted.
func (f *fixture) servers(groupID string) []string {
	f.t.Helper()
	r := sdknlb.CreateListServerGroupServersRequest()
	r.ServerGroupId = groupID
	r.MaxResults = requests.NewInteger(100)
	resp, err := f.sdk.ListServerGroupServers(r)
	emulatortest.NoError(f.t, err)
	var out []string
	for _, s := range resp.Servers {
		out = append(out, s.ServerId+":"+strconv.Itoa(s.Port)+"/"+strconv.Itoa(s.Weight))
	}
	sort.Strings(out)
	return out
}

// userLB creates a load balancer the way a user would, outside the CCM,
// with a TCP server group and listeners on the given ports; it returns the
// load balancer, the group and the listener ids by port.
func (f *fixture) userLB(ports ...int) (string, string, map[int]string) {
	f.t.Helper()
	r := sdknlb.CreateCreateLoadBalancerRequest()
	r.AddressType, r.VpcId, r.LoadBalancerName = "Intranet", vpcID, "user-lb"
	r.ZoneMappings = &[]sdknlb.CreateLoadBalancerZoneMappings{{ZoneId: zoneH, VSwitchId: "vsw-h"}, {ZoneId: zoneI, VSwitchId: "vsw-i"}}
	resp, err := f.sdk.CreateLoadBalancer(r)
	emulatortest.NoError(f.t, err)
	id := resp.LoadbalancerId
	emulatortest.Eventually(f.t, "user LB Active", func() bool { return f.getLB(id).LoadBalancerStatus == "Active" })
	g := sdknlb.CreateCreateServerGroupRequest()
	g.ServerGroupName, g.VpcId, g.Protocol = "user-group", vpcID, "TCP"
	gr, err := f.sdk.CreateServerGroup(g)
	emulatortest.NoError(f.t, err)
	ls := map[int]string{}
	for _, port := range ports {
		var lr *sdknlb.CreateListenerResponse
		emulatortest.Eventually(f.t, "user listener created", func() bool {
			l := sdknlb.CreateCreateListenerRequest()
			l.LoadBalancerId, l.ListenerProtocol, l.ServerGroupId = id, "TCP", gr.ServerGroupId
			l.ListenerPort, l.ListenerDescription = requests.NewInteger(port), "user listener "+strconv.Itoa(port)
			lr, err = f.sdk.CreateListener(l)
			return err == nil
		})
		ls[port] = lr.ListenerId
	}
	emulatortest.Eventually(f.t, "user listeners Running", func() bool {
		for _, l := range f.listeners(id) {
			if l.ListenerStatus != "Running" {
				return false
			}
		}
		return true
	})
	return id, gr.ServerGroupId, ls
}
