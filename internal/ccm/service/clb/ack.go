package clb

import (
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

// ack is a backend write's answer decoded down to what the CCM reads (no
// field: success is the absence of an error). The cloud answers
// AddVServerGroupBackendServers, RemoveVServerGroupBackendServers and
// SetVServerGroupAttribute with the group's whole member list, up to the
// 1,000 Nodes of a large cluster in every 20-member call; the SDK's typed
// responses decode it all, which made them the largest share of the heap
// held by syncs in flight (W4 at 5,000 Services: 17 of 62 MB live).
type ack struct{ *responses.BaseResponse }

// writeAck sends a backend write, decoding only its envelope.
func writeAck(c *slb.Client, req requests.AcsRequest) (*ack, error) {
	resp := &ack{BaseResponse: &responses.BaseResponse{}}
	if err := c.DoAction(req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}
