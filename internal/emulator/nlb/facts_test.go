package nlb_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

// TestListenerIdleTimeoutByProtocol follows the emulator's nlb:IdleTimeout
// facts: 10-900 for TCP (default 900), 10-20 for UDP (default 20).
func TestListenerIdleTimeoutByProtocol(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("idle"))
	tcp := f.createSG(t, "tcp", "vpc-a", "Instance", "TCP", false)
	udp := f.createSG(t, "udp", "vpc-a", "Instance", "UDP", false)
	create := func(sg, proto string, port, idle int) (*nlb.CreateListenerResponse, error) {
		r := nlb.CreateCreateListenerRequest()
		r.LoadBalancerId, r.ServerGroupId, r.ListenerProtocol = lb, sg, proto
		r.ListenerPort = requests.NewInteger(port)
		if idle > 0 {
			r.IdleTimeout = requests.NewInteger(idle)
		}
		return f.c.CreateListener(r)
	}
	for _, bad := range []struct {
		sg, proto  string
		port, idle int
	}{{tcp, "TCP", 81, 9}, {tcp, "TCP", 82, 901}, {udp, "UDP", 53, 21}, {udp, "UDP", 54, 9}} {
		_, err := create(bad.sg, bad.proto, bad.port, bad.idle)
		wantErr(t, err, "InvalidParameter", 400)
	}
	_, err := create(udp, "UDP", 55, 15)
	noErr(t, err)
	for _, tc := range []struct {
		sg, proto string
		port      int
		want      int
	}{{tcp, "TCP", 80, 900}, {udp, "UDP", 56, 20}} {
		resp, err := create(tc.sg, tc.proto, tc.port, 0)
		noErr(t, err)
		g := nlb.CreateGetListenerAttributeRequest()
		g.ListenerId = resp.ListenerId
		got, err := f.c.GetListenerAttribute(g)
		noErr(t, err)
		if got.IdleTimeout != tc.want {
			t.Errorf("%s listener: idle timeout %d, want %d", tc.proto, got.IdleTimeout, tc.want)
		}
	}
}
