package nlb

import (
	"sort"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// regionInfo is a region NLB is sold in, with its zones.
type regionInfo struct {
	Name  string
	Zones []string
}

// regions lists the regions DescribeRegions reports. Zones are the region
// id plus a letter; a region not listed here (the emulator may run in any)
// gets zones a to d.
var regions = map[string]regionInfo{
	"cn-hangzhou":    {"华东1（杭州）", []string{"b", "g", "h", "i", "j", "k"}},
	"cn-shanghai":    {"华东2（上海）", []string{"b", "e", "f", "g", "l", "m"}},
	"cn-beijing":     {"华北2（北京）", []string{"a", "c", "f", "g", "h", "i", "j", "k", "l"}},
	"cn-shenzhen":    {"华南1（深圳）", []string{"a", "c", "d", "e", "f"}},
	"cn-hongkong":    {"中国香港", []string{"b", "c", "d"}},
	"ap-southeast-1": {"新加坡", []string{"a", "b", "c"}},
	"us-west-1":      {"美国（硅谷）", []string{"a", "b"}},
	"eu-central-1":   {"德国（法兰克福）", []string{"a", "b", "c"}},
}

func zonesOf(region string) []string {
	letters := []string{"a", "b", "c", "d"}
	if r, ok := regions[region]; ok {
		letters = r.Zones
	}
	out := make([]string, 0, len(letters))
	for _, l := range letters {
		out = append(out, region+"-"+l)
	}
	return out
}

func (s *Service) describeZones(req *api.Request) (map[string]any, error) {
	zones := []map[string]any{}
	for _, z := range zonesOf(req.RegionID) {
		zones = append(zones, map[string]any{"ZoneId": z, "LocalName": z})
	}
	return map[string]any{"Zones": zones}, nil
}

func (s *Service) describeRegions(req *api.Request) (map[string]any, error) {
	ids := make([]string, 0, len(regions)+1)
	for id := range regions {
		ids = append(ids, id)
	}
	if _, ok := regions[req.RegionID]; !ok {
		ids = append(ids, req.RegionID)
	}
	sort.Strings(ids)
	english := req.Params.String("AcceptLanguage") == "en-US"
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		name := regions[id].Name
		if name == "" || english {
			name = id
		}
		out = append(out, map[string]any{"RegionId": id, "LocalName": name, "RegionEndpoint": "nlb." + id + ".aliyuncs.com"})
	}
	return map[string]any{"Regions": out}, nil
}
