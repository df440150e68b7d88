package nlb

import (
	"bytes"
	"encoding/json"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// PPv2Config is a listener's ProxyProtocolV2Config: which PrivateLink and
// VPC identifiers the Proxy Protocol v2 header carries to the servers.
type PPv2Config struct {
	// VpcIDEnabled carries the client's VPC id.
	VpcIDEnabled bool `json:"Ppv2VpcIdEnabled"`
	// PrivateLinkEpIDEnabled carries the PrivateLink endpoint id.
	PrivateLinkEpIDEnabled bool `json:"Ppv2PrivateLinkEpIdEnabled"`
	// PrivateLinkEpsIDEnabled carries the PrivateLink endpoint service id.
	PrivateLinkEpsIDEnabled bool `json:"Ppv2PrivateLinkEpsIdEnabled"`
}

// parsePPv2 applies the ProxyProtocolV2Config parameter of CreateListener
// and UpdateListenerAttribute. Clients send it as one JSON object (the
// SDKs' "json" shrink style); fields left out keep their values, so an
// update may name only what changes.
func parsePPv2(p api.Params, cfg *PPv2Config) error {
	raw := p.String("ProxyProtocolV2Config")
	if raw == "" {
		return nil
	}
	var in struct {
		Vpc *bool `json:"Ppv2VpcIdEnabled"`
		Ep  *bool `json:"Ppv2PrivateLinkEpIdEnabled"`
		Eps *bool `json:"Ppv2PrivateLinkEpsIdEnabled"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return api.InvalidParameter("ProxyProtocolV2Config", "The parameter ProxyProtocolV2Config must be a JSON object of the booleans Ppv2VpcIdEnabled, Ppv2PrivateLinkEpIdEnabled and Ppv2PrivateLinkEpsIdEnabled: %v.", err)
	}
	for _, f := range []struct {
		v   *bool
		dst *bool
	}{{in.Vpc, &cfg.VpcIDEnabled}, {in.Ep, &cfg.PrivateLinkEpIDEnabled}, {in.Eps, &cfg.PrivateLinkEpsIDEnabled}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return nil
}

// ppv2View is the ProxyProtocolV2Config object of ListListeners and
// GetListenerAttribute.
func ppv2View(cfg PPv2Config) map[string]any {
	return map[string]any{
		"Ppv2VpcIdEnabled": cfg.VpcIDEnabled, "Ppv2PrivateLinkEpIdEnabled": cfg.PrivateLinkEpIDEnabled,
		"Ppv2PrivateLinkEpsIdEnabled": cfg.PrivateLinkEpsIDEnabled,
	}
}
