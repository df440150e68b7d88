package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// obj is one resource as the API reports it, decoded from JSON so that the
// console sees exactly what an SDK client parses.
type obj = map[string]any

// maxPages bounds a listing, so that a paging bug cannot spin a page forever.
const maxPages = 200

// pager names how a listing pages: by page number (PageSize) or by token
// (MaxResults, or MaxResult for DescribeRouteEntryList).
type pager struct {
	sizeParam string
	size      int
	byToken   bool
}

var (
	byPage       = pager{sizeParam: "PageSize", size: 50}
	byToken      = pager{sizeParam: "MaxResults", size: 100, byToken: true}
	byTokenRoute = pager{sizeParam: "MaxResult", size: 100, byToken: true}
)

// call invokes a read-only action and decodes its answer as an SDK would.
func (c *Console) call(product, action, region string, params map[string]string) (obj, error) {
	body, err := c.backend.Invoke(product, action, region, params)
	if err != nil {
		return nil, err
	}
	return roundTrip(body)
}

// roundTrip encodes a handler's body and decodes it again, turning typed
// values into the plain JSON values the wire carries (numbers kept exact).
func roundTrip(body map[string]any) (obj, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out obj
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	return out, nil
}

// list calls a listing action page by page and returns the items found at
// path (e.g. "Vpcs.Vpc"), following NextToken or PageNumber/TotalCount.
func (c *Console) list(product, action, region string, params map[string]string, path string, pg pager) ([]obj, error) {
	var out []obj
	token, page := "", 1
	for i := 0; i < maxPages; i++ {
		p := map[string]string{pg.sizeParam: strconv.Itoa(pg.size)}
		for k, v := range params {
			p[k] = v
		}
		if pg.byToken && token != "" {
			p["NextToken"] = token
		}
		if !pg.byToken {
			p["PageNumber"] = strconv.Itoa(page)
		}
		body, err := c.call(product, action, region, p)
		if err != nil {
			return out, err
		}
		items := objects(lookup(body, path))
		out = append(out, items...)
		if pg.byToken {
			if token = str(lookup(body, "NextToken")); token == "" {
				return out, nil
			}
			continue
		}
		total, _ := strconv.Atoi(str(lookup(body, "TotalCount")))
		if len(items) == 0 || len(out) >= total {
			return out, nil
		}
		page++
	}
	return out, fmt.Errorf("%s/%s: more than %d pages", product, action, maxPages)
}

// lookup follows a dotted path through nested objects ("Tags.Tag"); nil
// when any step is missing.
func lookup(v any, path string) any {
	for path != "" {
		key := path
		if i := strings.IndexByte(path, '.'); i >= 0 {
			key, path = path[:i], path[i+1:]
		} else {
			path = ""
		}
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}

// objects keeps the objects of a JSON array.
func objects(v any) []obj {
	arr, _ := v.([]any)
	out := make([]obj, 0, len(arr))
	for _, e := range arr {
		if m, ok := e.(obj); ok {
			out = append(out, m)
		}
	}
	return out
}

// str renders a scalar JSON value as text ("" for null, objects and arrays).
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case obj, []any:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

// strs renders a JSON array of scalars.
func strs(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, e := range arr {
		out = append(out, str(e))
	}
	return out
}

// tag is one resource tag.
type tag struct{ Key, Value string }

// tagsOf reads a resource's tags in either shape the APIs use:
// Tags.Tag[{TagKey,TagValue}] (ECS, VPC, CLB) or Tags[{Key,Value}] (NLB).
func tagsOf(o obj) []tag {
	var raw []obj
	switch t := o["Tags"].(type) {
	case obj:
		raw = objects(t["Tag"])
	case []any:
		raw = objects(t)
	}
	var out []tag
	for _, r := range raw {
		k, v := str(r["TagKey"]), str(r["TagValue"])
		if k == "" {
			k, v = str(r["Key"]), str(r["Value"])
		}
		out = append(out, tag{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// regionView is everything the region page shows, as the APIs report it.
type regionView struct {
	Region         string
	VPCs           []*vpcView
	SecurityGroups []obj
	CLBs           []*clbView
	ACLs           []obj
	NLBs           []*nlbView
	// LooseGroups are NLB server groups no load balancer uses.
	LooseGroups []*groupView
	// Errors are the calls that failed; the page shows what it could read.
	Errors []string
}

type vpcView struct {
	VPC         obj
	VSwitches   []*vswView
	RouteTables []*routeTableView
}

type vswView struct {
	VSwitch   obj
	Instances []*instanceView
}

type instanceView struct {
	Instance obj
	ENIs     []obj
}

type routeTableView struct {
	Table   obj
	Entries []obj
}

type clbView struct {
	LB        obj
	Listeners []obj
	Groups    []*groupView
}

type groupView struct {
	Group    obj
	Backends []obj
}

type nlbView struct {
	LB        obj
	Listeners []obj
	Groups    []*groupView
}

// collector gathers a region's view, noting failed calls instead of
// giving up, so one broken listing does not hide the rest.
type collector struct {
	c      *Console
	region string
	errs   []string
}

func (k *collector) list(product, action string, params map[string]string, path string, pg pager) []obj {
	out, err := k.c.list(product, action, k.region, params, path, pg)
	if err != nil {
		k.errs = append(k.errs, err.Error())
	}
	return out
}

func (k *collector) one(product, action string, params map[string]string) obj {
	out, err := k.c.call(product, action, k.region, params)
	if err != nil {
		k.errs = append(k.errs, err.Error())
	}
	return out
}

// region reads a region's resources through the products' own actions.
func (c *Console) region(region string) *regionView {
	k := &collector{c: c, region: region}
	v := &regionView{Region: region}

	enis := map[string][]obj{}
	for _, e := range k.list("ecs", "DescribeNetworkInterfaces", nil, "NetworkInterfaceSets.NetworkInterfaceSet", byPage) {
		id := str(e["InstanceId"])
		enis[id] = append(enis[id], e)
	}
	instances := map[string][]*instanceView{}
	for _, in := range k.list("ecs", "DescribeInstances", nil, "Instances.Instance", byPage) {
		vsw := str(lookup(in, "VpcAttributes.VSwitchId"))
		instances[vsw] = append(instances[vsw], &instanceView{Instance: in, ENIs: enis[str(in["InstanceId"])]})
	}
	vsws := map[string][]*vswView{}
	for _, s := range k.list("vpc", "DescribeVSwitches", nil, "VSwitches.VSwitch", byPage) {
		vpcID := str(s["VpcId"])
		vsws[vpcID] = append(vsws[vpcID], &vswView{VSwitch: s, Instances: instances[str(s["VSwitchId"])]})
	}
	tables := map[string][]*routeTableView{}
	for _, t := range k.list("vpc", "DescribeRouteTableList", nil, "RouterTableList.RouterTableListType", byPage) {
		entries := k.list("vpc", "DescribeRouteEntryList", map[string]string{"RouteTableId": str(t["RouteTableId"])}, "RouteEntrys.RouteEntry", byTokenRoute)
		vpcID := str(t["VpcId"])
		tables[vpcID] = append(tables[vpcID], &routeTableView{Table: t, Entries: entries})
	}
	for _, vpc := range k.list("vpc", "DescribeVpcs", nil, "Vpcs.Vpc", byPage) {
		id := str(vpc["VpcId"])
		v.VPCs = append(v.VPCs, &vpcView{VPC: vpc, VSwitches: vsws[id], RouteTables: tables[id]})
	}
	v.SecurityGroups = k.list("ecs", "DescribeSecurityGroups", nil, "SecurityGroups.SecurityGroup", byPage)

	for _, lb := range k.list("slb", "DescribeLoadBalancers", nil, "LoadBalancers.LoadBalancer", byPage) {
		id := str(lb["LoadBalancerId"])
		cv := &clbView{LB: lb}
		cv.Listeners = k.list("slb", "DescribeLoadBalancerListeners", map[string]string{"LoadBalancerId.1": id}, "Listeners", byToken)
		for _, g := range objects(lookup(k.one("slb", "DescribeVServerGroups", map[string]string{"LoadBalancerId": id}), "VServerGroups.VServerGroup")) {
			attr := k.one("slb", "DescribeVServerGroupAttribute", map[string]string{"VServerGroupId": str(g["VServerGroupId"])})
			cv.Groups = append(cv.Groups, &groupView{Group: g, Backends: objects(lookup(attr, "BackendServers.BackendServer"))})
		}
		// Health as DescribeHealthStatus reports it, per server and port
		// (abnormal on any listener wins).
		health := map[string]string{}
		for _, h := range objects(lookup(k.one("slb", "DescribeHealthStatus", map[string]string{"LoadBalancerId": id}), "BackendServers.BackendServer")) {
			key := str(h["ServerId"]) + "/" + str(h["Port"])
			if st := str(h["ServerHealthStatus"]); health[key] == "" || st == "abnormal" {
				health[key] = st
			}
		}
		for _, g := range cv.Groups {
			for _, b := range g.Backends {
				b[healthKey] = health[str(b["ServerId"])+"/"+str(b["Port"])]
			}
		}
		v.CLBs = append(v.CLBs, cv)
	}
	v.ACLs = k.list("slb", "DescribeAccessControlLists", nil, "Acls.Acl", byPage)

	groups := k.list("nlb", "ListServerGroups", nil, "ServerGroups", byToken)
	byLB := map[string][]*groupView{}
	for _, g := range groups {
		gv := &groupView{Group: g, Backends: k.list("nlb", "ListServerGroupServers", map[string]string{"ServerGroupId": str(g["ServerGroupId"])}, "Servers", byToken)}
		related := strs(g["RelatedLoadBalancerIds"])
		for _, lb := range related {
			byLB[lb] = append(byLB[lb], gv)
		}
		if len(related) == 0 {
			v.LooseGroups = append(v.LooseGroups, gv)
		}
	}
	for _, lb := range k.list("nlb", "ListLoadBalancers", nil, "LoadBalancers", byToken) {
		id := str(lb["LoadBalancerId"])
		nv := &nlbView{LB: lb, Groups: byLB[id],
			Listeners: k.list("nlb", "ListListeners", map[string]string{"LoadBalancerIds.1": id}, "Listeners", byToken)}
		// Health as GetListenerHealthStatus reports it: the servers it
		// lists are not healthy, the others of a checked group are.
		health := map[string]string{}
		for _, l := range nv.Listeners {
			out := k.one("nlb", "GetListenerHealthStatus", map[string]string{"ListenerId": str(l["ListenerId"])})
			for _, item := range objects(out["ListenerHealthStatus"]) {
				for _, info := range objects(item["ServerGroupInfos"]) {
					gid := str(info["ServerGroupId"])
					if b, _ := info["HeathCheckEnabled"].(bool); b && health[gid] == "" {
						health[gid] = "Healthy"
					}
					for _, s := range objects(info["NonNormalServers"]) {
						reason := str(lookup(s, "Reason.ReasonCode"))
						health[gid+"/"+str(s["ServerId"])+"/"+str(s["Port"])] = strings.TrimSpace(str(s["Status"]) + " " + reason)
					}
				}
			}
		}
		for _, g := range nv.Groups {
			gid := str(g.Group["ServerGroupId"])
			for _, b := range g.Backends {
				if st, ok := health[gid+"/"+str(b["ServerId"])+"/"+str(b["Port"])]; ok {
					b[healthKey] = st
				} else {
					b[healthKey] = health[gid]
				}
			}
		}
		v.NLBs = append(v.NLBs, nv)
	}
	v.Errors = k.errs
	return v
}

// healthKey is where a backend's health, read from the load balancer's
// health action, is put into its row for the page (no API field has the
// name).
const healthKey = "_health"

// regionCount is a region's line on the overview page.
type regionCount struct {
	Region                                 string
	VPCs, VSwitches, Instances, CLBs, NLBs int
	Errors                                 []string
}

// count reads how many resources a region has, by the listings' TotalCount.
func (c *Console) count(region string) regionCount {
	k := &collector{c: c, region: region}
	total := func(product, action, sizeParam string) int {
		n, _ := strconv.Atoi(str(k.one(product, action, map[string]string{sizeParam: "1"})["TotalCount"]))
		return n
	}
	rc := regionCount{Region: region,
		VPCs:      total("vpc", "DescribeVpcs", "PageSize"),
		VSwitches: total("vpc", "DescribeVSwitches", "PageSize"),
		Instances: total("ecs", "DescribeInstances", "PageSize"),
		CLBs:      total("slb", "DescribeLoadBalancers", "PageSize"),
		NLBs:      total("nlb", "ListLoadBalancers", "MaxResults"),
	}
	rc.Errors = k.errs
	return rc
}
