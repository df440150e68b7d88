package api

import (
	"net/http"
	"sort"
)

// Region is a region of the emulated cloud with its zones.
type Region struct {
	// ID is the region id, e.g. cn-hangzhou.
	ID string
	// LocalName is the name DescribeRegions reports in Chinese.
	LocalName string
	// Zones are the full zone ids, e.g. cn-hangzhou-h, in the order
	// listings report them; the first two are a CLB's default master and
	// slave zones.
	Zones []string
}

// builtinRegions are the regions (and zone letters) NLB's DescribeRegions
// and DescribeZones reported for these ids; other ids get zones a to d.
var builtinRegions = []struct {
	id, name, letters string
}{
	{"cn-hangzhou", "华东1（杭州）", "bghijk"},
	{"cn-shanghai", "华东2（上海）", "befglm"},
	{"cn-beijing", "华北2（北京）", "acfghijkl"},
	{"cn-shenzhen", "华南1（深圳）", "acdef"},
	{"cn-hongkong", "中国香港", "bcd"},
	{"ap-southeast-1", "新加坡", "abc"},
	{"us-west-1", "美国（硅谷）", "ab"},
	{"eu-central-1", "德国（法兰克福）", "abc"},
}

// RegionFor returns the built-in entry of id, or one with zones a to d
// (named by its id) for an id the table lacks.
func RegionFor(id string) Region {
	name, letters := id, "abcd"
	for _, b := range builtinRegions {
		if b.id == id {
			name, letters = b.name, b.letters
		}
	}
	r := Region{ID: id, LocalName: name}
	for _, l := range letters {
		r.Zones = append(r.Zones, id+"-"+string(l))
	}
	return r
}

// DefaultRegionIDs are the regions an emulator offers unless configured
// otherwise: the built-in table.
func DefaultRegionIDs() []string {
	ids := make([]string, 0, len(builtinRegions))
	for _, b := range builtinRegions {
		ids = append(ids, b.id)
	}
	return ids
}

// Regions is the emulator's region table; calls naming another region are
// refused with the product's code (Product.UnknownRegion).
type Regions struct {
	byID map[string]Region
	ids  []string
}

// NewRegions builds the table of the given region ids (RegionFor gives
// each its zones); duplicates and blanks are ignored.
func NewRegions(ids []string) *Regions {
	r := &Regions{byID: map[string]Region{}}
	for _, id := range ids {
		if _, dup := r.byID[id]; id == "" || dup {
			continue
		}
		r.byID[id] = RegionFor(id)
		r.ids = append(r.ids, id)
	}
	sort.Strings(r.ids)
	return r
}

// Lookup returns the region id, if the table has it.
func (r *Regions) Lookup(id string) (Region, bool) {
	reg, ok := r.byID[id]
	return reg, ok
}

// List returns the regions sorted by id.
func (r *Regions) List() []Region {
	out := make([]Region, 0, len(r.ids))
	for _, id := range r.ids {
		out = append(out, r.byID[id])
	}
	return out
}

// Zones returns the zones of the request's region: from the gateway's
// table, or RegionFor when the request was built without one.
func (req *Request) Zones() []string {
	if req.Regions != nil {
		if r, ok := req.Regions.Lookup(req.RegionID); ok {
			return r.Zones
		}
	}
	return RegionFor(req.RegionID).Zones
}

// Unknown-region answers per product, as each API documents them: ECS and
// VPC list 404 InvalidRegionId.NotFound in their actions' error tables
// (with different messages); NLB's public error codes have 400
// UnauthorizedRegion. CLB's tables name no region code, and the CLB API
// shares the ECS/VPC gateway, so it answers as VPC does.
var (
	// ECSUnknownRegion is ECS's answer to a RegionId it does not serve.
	ECSUnknownRegion = func(id string) *Error {
		return Errorf(http.StatusNotFound, "InvalidRegionId.NotFound", "The specified RegionId does not exist.")
	}
	// VPCUnknownRegion is VPC's (and CLB's) answer to an unknown RegionId.
	VPCUnknownRegion = func(id string) *Error {
		return Errorf(http.StatusNotFound, "InvalidRegionId.NotFound", "The specified RegionId does not exist in our records.")
	}
	// NLBUnknownRegion is NLB's answer to an unknown RegionId.
	NLBUnknownRegion = func(id string) *Error {
		return Errorf(http.StatusBadRequest, "UnauthorizedRegion", "The specified region of %s is not authorized.", quote(id))
	}
)
