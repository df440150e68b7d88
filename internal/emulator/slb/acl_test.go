package slb_test

import (
	"net/http"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
)

// TestAccessControlListTagsAndDetach: lists are found by tag (the CCM's
// proof of ownership), a list a listener uses can lose entries but not all
// of them and cannot be deleted, and turning access control off detaches
// it so that it can.
func TestAccessControlListTagsAndDetach(t *testing.T) {
	_, c := newEnv(t)
	create := func(name string, tags ...slb.CreateAccessControlListTag) string {
		r := slb.CreateCreateAccessControlListRequest()
		r.AclName = name
		if len(tags) > 0 {
			r.Tag = &tags
		}
		resp, err := c.CreateAccessControlList(r)
		must(t, err)
		return resp.AclId
	}
	ours := create("k8s-clb-a1", slb.CreateAccessControlListTag{Key: "kubernetes.do.not.delete", Value: "a1"}, slb.CreateAccessControlListTag{Key: "ack.aliyun.com", Value: "c1"})
	create("user")
	create("other", slb.CreateAccessControlListTag{Key: "kubernetes.do.not.delete", Value: "a2"})

	for _, tc := range []struct {
		name string
		tags []slb.DescribeAccessControlListsTag
		want []string
	}{
		{"both tags", []slb.DescribeAccessControlListsTag{{Key: "kubernetes.do.not.delete", Value: "a1"}, {Key: "ack.aliyun.com", Value: "c1"}}, []string{ours}},
		{"wrong cluster", []slb.DescribeAccessControlListsTag{{Key: "kubernetes.do.not.delete", Value: "a1"}, {Key: "ack.aliyun.com", Value: "c2"}}, nil},
		{"key only", []slb.DescribeAccessControlListsTag{{Key: "ack.aliyun.com"}}, []string{ours}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := slb.CreateDescribeAccessControlListsRequest()
			r.Tag = &tc.tags
			resp, err := c.DescribeAccessControlLists(r)
			must(t, err)
			var got []string
			for _, a := range resp.Acls.Acl {
				got = append(got, a.AclId)
			}
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	entries := func(body string, add bool) error {
		if add {
			r := slb.CreateAddAccessControlListEntryRequest()
			r.AclId, r.AclEntrys = ours, body
			_, err := c.AddAccessControlListEntry(r)
			return err
		}
		r := slb.CreateRemoveAccessControlListEntryRequest()
		r.AclId, r.AclEntrys = ours, body
		_, err := c.RemoveAccessControlListEntry(r)
		return err
	}
	must(t, entries(`[{"entry":"10.0.0.0/8"},{"entry":"192.168.0.0/16"}]`, true))
	lb := createLB(t, c, nil).LoadBalancerId
	createTCP(t, c, lb, 80, func(r *slb.CreateLoadBalancerTCPListenerRequest) {
		r.AclId, r.AclStatus, r.AclType = ours, "on", "white"
	})
	must(t, entries(`[{"entry":"10.0.0.0/8"}]`, false))
	wantErr(t, entries(`[{"entry":"192.168.0.0/16"}]`, false), "Operation.NotAllowed", http.StatusBadRequest)
	del := slb.CreateDeleteAccessControlListRequest()
	del.AclId = ours
	_, err := c.DeleteAccessControlList(del)
	wantErr(t, err, "Operation.NotAllowed", http.StatusBadRequest)

	off := slb.CreateSetLoadBalancerTCPListenerAttributeRequest()
	off.LoadBalancerId, off.ListenerPort, off.AclStatus = lb, requests.NewInteger(80), "off"
	_, err = c.SetLoadBalancerTCPListenerAttribute(off)
	must(t, err)
	lr := slb.CreateDescribeLoadBalancerListenersRequest()
	lr.LoadBalancerId = &[]string{lb}
	ls, err := c.DescribeLoadBalancerListeners(lr)
	must(t, err)
	if l := ls.Listeners[0]; l.AclStatus != "off" || l.AclId != "" || len(l.AclIds) != 0 {
		t.Fatalf("access control off leaves the list attached: %+v", l)
	}
	must(t, entries(`[{"entry":"192.168.0.0/16"}]`, false))
	_, err = c.DeleteAccessControlList(del)
	must(t, err)
}
