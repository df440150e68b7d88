package nlb

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

func (s *Service) describeZones(req *api.Request) (map[string]any, error) {
	zones := []map[string]any{}
	for _, z := range req.Zones() {
		zones = append(zones, map[string]any{"ZoneId": z, "LocalName": z})
	}
	return map[string]any{"Zones": zones}, nil
}

// describeRegions lists the emulator's region table (or, without one,
// the request's region).
func (s *Service) describeRegions(req *api.Request) (map[string]any, error) {
	list := []api.Region{api.RegionFor(req.RegionID)}
	if req.Regions != nil {
		list = req.Regions.List()
	}
	english := req.Params.String("AcceptLanguage") == "en-US"
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		name := r.LocalName
		if english {
			name = r.ID
		}
		out = append(out, map[string]any{"RegionId": r.ID, "LocalName": name, "RegionEndpoint": "nlb." + r.ID + ".aliyuncs.com"})
	}
	return map[string]any{"Regions": out}, nil
}
