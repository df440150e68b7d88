package clb

import (
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// ack is a backend write's answer decoded down to what the CCM reads (no
// field: success is the absence of an error). The cloud answers
// AddVServerGroupBackendServers, RemoveVServerGroupBackendServers and
// SetVServerGroupAttribute with the group's whole member list, up to the
// 1,000 Nodes of a large cluster in every 20-member call; the SDK's typed
// responses decode it all, which made them the largest share of the heap
// held by syncs in flight (W4 at 5,000 Services: 17 of 62 MB live).
type ack struct{ *responses.BaseResponse }

// The SDK is not even handed the member list: the cloud client's
// transport reduces these answers to their envelope as they arrive
// (cloud.AnswerEnvelopeOnly), so a call in flight holds a read buffer
// instead of the list read whole, twice.
func init() {
	cloud.AnswerEnvelopeOnly("AddVServerGroupBackendServers", "RemoveVServerGroupBackendServers", "SetVServerGroupAttribute")
}

// newAck is the response cloud.Call decodes a backend write into.
func newAck() *ack { return &ack{BaseResponse: &responses.BaseResponse{}} }
