package nlb

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// ppv2Prefix names the Proxy Protocol v2 settings in Listener.Set; the SDK
// we use predates ProxyProtocolV2Config, so they are sent as the one JSON
// object the API takes (formParams) and read from the raw ListListeners
// answer (ppv2Params).
const ppv2Prefix = "ProxyProtocolV2Config."

// ppv2Fields maps each ppv2-* annotation's setting to its API field.
var ppv2Fields = []struct {
	field string
	get   func(l *annotations.Listener) *bool
}{
	{"Ppv2PrivateLinkEpIdEnabled", func(l *annotations.Listener) *bool { return l.PPv2EndpointID }},
	{"Ppv2PrivateLinkEpsIdEnabled", func(l *annotations.Listener) *bool { return l.PPv2EndpointServiceID }},
	{"Ppv2VpcIdEnabled", func(l *annotations.Listener) *bool { return l.PPv2VPCID }},
}

// ppv2Settings adds the Proxy Protocol v2 fields the annotations set.
func ppv2Settings(l *annotations.Listener, set map[string]string) {
	for _, f := range ppv2Fields {
		if v := f.get(l); v != nil {
			set[ppv2Prefix+f.field] = boolStr(*v)
		}
	}
}

// ppv2Form folds the ProxyProtocolV2Config.* settings of a call into the
// one JSON parameter; only the fields being set are sent, the API keeps
// the others.
func ppv2Form(set map[string]string, out map[string]string) {
	obj := map[string]bool{}
	for k, v := range set {
		if f, ok := strings.CutPrefix(k, ppv2Prefix); ok {
			b, _ := strconv.ParseBool(v)
			obj[f] = b
		}
	}
	if len(obj) == 0 {
		return
	}
	data, _ := json.Marshal(obj)
	out["ProxyProtocolV2Config"] = string(data)
}

// ppv2Params reads every listener's ProxyProtocolV2Config from a raw
// ListListeners answer, by listener id, under the names of Listener.Set.
// A listener that reports none has all three off (the API's default), so
// an annotation asking for false writes nothing.
func ppv2Params(body []byte) map[string]map[string]string {
	var resp struct {
		Listeners []struct {
			ListenerID string          `json:"ListenerId"`
			Config     map[string]bool `json:"ProxyProtocolV2Config"`
		} `json:"Listeners"`
	}
	out := map[string]map[string]string{}
	if json.Unmarshal(body, &resp) != nil {
		return out
	}
	for _, l := range resp.Listeners {
		m := map[string]string{}
		for _, f := range ppv2Fields {
			m[ppv2Prefix+f.field] = boolStr(l.Config[f.field])
		}
		out[l.ListenerID] = m
	}
	return out
}
