package nlb_test

import (
	"reflect"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service/nlb"
)

// TestModelVirtualNodePods: with ecs backends, a pod on a virtual Node is
// an Eni server on its target port in an Instance group (an Ip server in
// an Ip group), next to the ECS Node's Ecs server on the nodePort; a pod
// whose ENI the resolver did not prove is left out of Instance groups.
func TestModelVirtualNodePods(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want []nlb.Server
	}{
		{name: "instance group", want: []nlb.Server{
			{ServerID: "i-n1", Type: nlb.ServerEcs, Port: 30080, Weight: 2},
			{ServerID: "eni-eci1", IP: "10.9.0.1", Type: nlb.ServerEni, Port: 8080, Weight: 1},
		}},
		{name: "ip group", ann: map[string]string{"server-group-type": "ip"}, want: []nlb.Server{
			{ServerID: "10.0.0.1", IP: "10.0.0.1", Type: nlb.ServerIP, Port: 30080, Weight: 2},
			{ServerID: "10.9.0.1", IP: "10.9.0.1", Type: nlb.ServerIP, Port: 8080, Weight: 1},
			{ServerID: "10.9.0.2", IP: "10.9.0.2", Type: nlb.ServerIP, Port: 8080, Weight: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, svc("vk-"+tc.name[:2], tc.ann), nil, nil)
			req.Backends = map[int32][]service.Target{80: {
				{NodeName: "n1", InstanceID: "i-n1", Port: 30080, Weight: 2},
				{NodeName: "vk", IP: "10.9.0.1", Port: 8080, Weight: 1},
				{NodeName: "vk", IP: "10.9.0.2", Port: 8080, Weight: 1},
			}}
			m := nlb.BuildModel(withENIs(req, map[string]string{"10.9.0.1": "eni-eci1"}), nlb.Addresses{InstanceIPs: map[string]string{"i-n1": "10.0.0.1"}})
			got := m.Groups[0].Servers
			for i := range got {
				got[i].Description = ""
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("servers\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
