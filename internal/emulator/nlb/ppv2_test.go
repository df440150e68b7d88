package nlb_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
)

// ppv2Of reads a listener's ProxyProtocolV2Config from the raw
// GetListenerAttribute and ListListeners answers (the SDK's typed
// responses have no field for it).
func (f *fixture) ppv2Of(t *testing.T, lb, id string) (fromGet, fromList map[string]bool) {
	t.Helper()
	get := f.getListener(t, id)
	var g struct{ ProxyProtocolV2Config map[string]bool }
	noErr(t, json.Unmarshal(get.GetHttpContentBytes(), &g))
	r := nlb.CreateListListenersRequest()
	r.LoadBalancerIds = &[]string{lb}
	list, err := f.c.ListListeners(r)
	noErr(t, err)
	var l struct {
		Listeners []struct {
			ListenerId            string
			ProxyProtocolV2Config map[string]bool
		}
	}
	noErr(t, json.Unmarshal(list.GetHttpContentBytes(), &l))
	for _, x := range l.Listeners {
		if x.ListenerId == id {
			fromList = x.ProxyProtocolV2Config
		}
	}
	return g.ProxyProtocolV2Config, fromList
}

// TestProxyProtocolV2Config: CreateListener and UpdateListenerAttribute
// take ProxyProtocolV2Config as one JSON object (as the SDKs send it); an
// update changes only the fields it names; both reads report all three;
// malformed JSON or an unknown field is InvalidParameter.
func TestProxyProtocolV2Config(t *testing.T) {
	f := newFixture(t)
	lb := f.createLB(t, lbRequest("ppv2"))
	sg := f.createSG(t, "ppv2", "vpc-a", "Instance", "TCP", false)
	c := nlb.CreateCreateListenerRequest()
	c.LoadBalancerId, c.ServerGroupId, c.ListenerProtocol = lb, sg, "TCP"
	c.ListenerPort = requests.NewInteger(80)
	c.ProxyProtocolEnabled = requests.NewBoolean(true)
	c.GetFormParams()["ProxyProtocolV2Config"] = `{"Ppv2VpcIdEnabled":true}`
	resp, err := f.c.CreateListener(c)
	noErr(t, err)
	id := resp.ListenerId
	want := func(vpc, ep, eps bool) {
		t.Helper()
		w := map[string]bool{"Ppv2VpcIdEnabled": vpc, "Ppv2PrivateLinkEpIdEnabled": ep, "Ppv2PrivateLinkEpsIdEnabled": eps}
		g, l := f.ppv2Of(t, lb, id)
		for k, v := range w {
			if g[k] != v || l[k] != v || len(g) != 3 || len(l) != 3 {
				t.Fatalf("GetListenerAttribute %v, ListListeners %v; want %v", g, l, w)
			}
		}
	}
	want(true, false, false)
	update := func(cfg string) error {
		u := nlb.CreateUpdateListenerAttributeRequest()
		u.ListenerId = id
		u.GetFormParams()["ProxyProtocolV2Config"] = cfg
		_, err := f.c.UpdateListenerAttribute(u)
		return err
	}
	noErr(t, update(`{"Ppv2PrivateLinkEpsIdEnabled":true}`))
	want(true, false, true)
	noErr(t, update(`{"Ppv2VpcIdEnabled":false,"Ppv2PrivateLinkEpIdEnabled":true}`))
	want(false, true, true)
	for _, bad := range []string{`{"Ppv2VpcIdEnabled":"yes"}`, `{"Ppv2Other":true}`, `not json`} {
		wantErr(t, update(bad), "InvalidParameter", http.StatusBadRequest)
	}
	want(false, true, true)
}
