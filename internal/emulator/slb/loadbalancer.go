package slb

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Load balancer specifications still accepted by the pay-by-spec billing method.
var lbSpecs = facts.Enum("slb:LoadBalancerSpec")

// The peak bandwidth of a load balancer, in Mbit/s.
var bandwidthMin, bandwidthMax = facts.Range("slb:Bandwidth")

// Public addresses come from 47.99.0.0/16 onwards, a block the emulator owns.
const publicIPBase = 47<<24 | 99<<16

// fingerprint identifies a call's business parameters for ClientToken
// checks; SLB leaves ClientToken itself out, which persisted tokens rely on.
func fingerprint(p api.Params) string { return api.Fingerprint(p, "clienttoken") }

// orderID returns a random order number in the format of the billing system.
func orderID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return 200000000000000 + int64(binary.BigEndian.Uint64(b[:])%99999999999999)
}

func (s *Service) allocatePublicIP(lbID, version string) string {
	for {
		s.state.NextPublicIP++
		n := s.state.NextPublicIP
		var ip string
		if version == "ipv6" {
			ip = fmt.Sprintf("2408:4005:3c0:%x::%x", n>>16, n&0xffff)
		} else {
			v := publicIPBase + n
			if v&0xff == 0 || v&0xff == 255 {
				continue
			}
			ip = fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
		}
		if _, used := s.state.PublicIPs[ip]; !used {
			s.state.PublicIPs[ip] = lbID
			return ip
		}
	}
}

// classicIntranetBase starts the range of classic-network intranet
// addresses, which belong to no VPC of the account.
const classicIntranetBase = 10<<24 | 157<<16

// allocateClassicIP gives a classic-network intranet load balancer its
// address: want when it is in the classic range and free, else the first
// free one.
func (s *Service) allocateClassicIP(lbID, want string) (string, error) {
	if want != "" {
		a, err := netip.ParseAddr(want)
		b := a.As4()
		if err != nil || !a.Is4() || uint32(b[0])<<24|uint32(b[1])<<16 != classicIntranetBase {
			return "", api.InvalidParameter("Address", "The specified Address %s is not an address of the classic network.", want)
		}
		if _, used := s.state.PublicIPs[want]; used {
			return "", api.Errorf(http.StatusBadRequest, "InvalidIpAddress.AlreadyUsed", "The specified Address %s is already used.", want)
		}
		s.state.PublicIPs[want] = lbID
		return want, nil
	}
	for n := uint32(1); n < 1<<16; n++ {
		v := classicIntranetBase + n
		if v&0xff == 0 || v&0xff == 255 {
			continue
		}
		ip := fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
		if _, used := s.state.PublicIPs[ip]; !used {
			s.state.PublicIPs[ip] = lbID
			return ip, nil
		}
	}
	return "", api.Errorf(http.StatusBadRequest, "InsufficientIpAddress", "The classic network has no free address left.")
}

func createResponse(lb *LoadBalancer, order int64) map[string]any {
	return map[string]any{
		"LoadBalancerId":   lb.ID,
		"LoadBalancerName": lb.Name,
		"Address":          lb.Address,
		"AddressIPVersion": lb.AddressIPVersion,
		"NetworkType":      lb.NetworkType,
		"VpcId":            lb.VpcID,
		"VSwitchId":        lb.VSwitchID,
		"ResourceGroupId":  api.ResourceGroupOr(lb.ResourceGroupID),
		"OrderId":          order,
	}
}

// validLBName checks a LoadBalancerName by the emulator's name rule.
func validLBName(v string) error {
	if facts.ValidName("slb:LoadBalancerName", v) {
		return nil
	}
	return api.InvalidParameter("LoadBalancerName", "The parameter LoadBalancerName %q must be %s.", v, facts.NameRule("slb:LoadBalancerName"))
}

func validName(key, v string, max int) error {
	if len([]rune(v)) > max || strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return api.InvalidParameter(key, "The parameter %s must be 1 to %d characters and must not start with http:// or https://.", key, max)
	}
	return nil
}

func (s *Service) createLoadBalancer(req *api.Request) (map[string]any, error) {
	p := req.Params
	token := p.String("ClientToken")
	fp := fingerprint(p)
	if token != "" {
		if e := s.state.ClientTokens[token]; e != nil {
			if e.Fingerprint != fp {
				return nil, api.Errorf(http.StatusBadRequest, "IdempotentParameterMismatch", "The request uses the same client token as a previous, but non-identical request.")
			}
			if lb := s.state.LoadBalancers[e.LoadBalancerID]; lb != nil {
				order := int64(0)
				if lb.PayType == "PrePay" {
					order = orderID()
				}
				return createResponse(lb, order), nil
			}
		}
	}
	addrType, err := p.Enum("AddressType", "internet", facts.Enum("slb:AddressType")...)
	if err != nil {
		return nil, err
	}
	ipVersion, err := p.Enum("AddressIPVersion", "ipv4", facts.Enum("slb:AddressIPVersion")...)
	if err != nil {
		return nil, err
	}
	if ipVersion == "ipv6" && addrType == "intranet" {
		return nil, api.InvalidParameter("AddressIPVersion", "An IPv6 load balancer must be internet-facing.")
	}
	spec, err := p.Enum("LoadBalancerSpec", "", lbSpecs...)
	if err != nil {
		return nil, err
	}
	defCharge := "PayByCLCU"
	if spec != "" {
		defCharge = "PayBySpec"
	}
	instanceCharge, err := p.Enum("InstanceChargeType", defCharge, facts.Enum("slb:InstanceChargeType")...)
	if err != nil {
		return nil, err
	}
	if instanceCharge == "PayBySpec" && spec == "" {
		return nil, api.MissingParameter("LoadBalancerSpec")
	}
	if instanceCharge == "PayByCLCU" {
		spec = ""
	}
	internetCharge, err := p.Enum("InternetChargeType", "paybytraffic", facts.Enum("slb:InternetChargeType")...)
	if err != nil {
		return nil, err
	}
	bandwidth, err := p.IntRange("Bandwidth", 5120, bandwidthMin, bandwidthMax)
	if err != nil {
		return nil, err
	}
	payType, err := p.Enum("PayType", "PayOnDemand", "PayOnDemand", "PrePay")
	if err != nil {
		return nil, err
	}
	deleteProtection, err := onOff(p, "DeleteProtection", "off")
	if err != nil {
		return nil, err
	}
	modStatus, err := p.Enum("ModificationProtectionStatus", "NonProtection", facts.Enum("slb:ModificationProtectionStatus")...)
	if err != nil {
		return nil, err
	}
	modReason := p.String("ModificationProtectionReason")
	if modStatus != "ConsoleProtection" {
		modReason = ""
	}
	name := p.String("LoadBalancerName")
	if name != "" {
		if err := validLBName(name); err != nil {
			return nil, err
		}
	}
	tags, err := s.validateNewTags(p.Tags(), nil)
	if err != nil {
		return nil, err
	}
	rg := api.ResourceGroupOr(p.String("ResourceGroupId"))
	if q := s.st.Settings().Quota(store.QuotaSLBInstances); len(s.state.LoadBalancers) >= q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.LoadBalancersNum", "The quota of LoadBalancersNum is exceeded, usage %d/%d.", len(s.state.LoadBalancers), q)
	}
	lb := &LoadBalancer{
		ID: store.NewID("lb"), RegionID: req.RegionID, Name: name, Status: "active",
		AddressType: addrType, AddressIPVersion: ipVersion, Spec: spec,
		InstanceChargeType: instanceCharge, InternetChargeType: internetCharge, Bandwidth: bandwidth,
		PayType: payType, DeleteProtection: deleteProtection,
		ModificationProtectionStatus: modStatus, ModificationProtectionReason: modReason,
		ResourceGroupID: rg, CreatedAt: req.Now, Tags: tags, Listeners: map[string]*Listener{},
		SlaveZoneID: p.String("SlaveZoneId"),
	}
	if lb.Name == "" {
		lb.Name = "auto_named_slb"
	}
	// An intranet load balancer is in a VPC when it names a vSwitch, and
	// in the classic network otherwise (the API has no NetworkType
	// parameter: the vSwitch decides).
	if vswID := p.String("VSwitchId"); addrType == "intranet" && vswID != "" {
		vsw, ok := s.vpc.VSwitch(vswID)
		if !ok || (vsw.RegionID != "" && vsw.RegionID != req.RegionID) {
			return nil, api.NotFound("InvalidVSwitchId.NotFound", "The specified VSwitchId %s does not exist.", vswID)
		}
		if v := p.String("VpcId"); v != "" && v != vsw.VpcID {
			return nil, api.InvalidParameter("VpcId", "The specified vSwitch %s does not belong to VPC %s.", vswID, v)
		}
		if z := p.String("MasterZoneId"); z != "" && z != vsw.ZoneID {
			return nil, api.InvalidParameter("MasterZoneId", "The MasterZoneId %s does not match the zone %s of vSwitch %s.", z, vsw.ZoneID, vswID)
		}
		addr, err := s.vpc.AllocatePrivateIP(vswID, p.String("Address"))
		if err != nil {
			return nil, err
		}
		lb.NetworkType, lb.VpcID, lb.VSwitchID, lb.MasterZoneID, lb.Address = "vpc", vsw.VpcID, vswID, vsw.ZoneID, addr
		lb.InternetChargeType = "paybytraffic"
	} else {
		lb.NetworkType = "classic"
		// The defaults are the region's first two zones of the emulator's
		// zone table, so that DescribeZones-style lookups find them.
		zones := req.Zones()
		lb.MasterZoneID = p.String("MasterZoneId")
		for _, z := range []struct{ name, id string }{{"MasterZoneId", lb.MasterZoneID}, {"SlaveZoneId", lb.SlaveZoneID}} {
			if z.id != "" && !slices.Contains(zones, z.id) {
				return nil, api.InvalidParameter(z.name, "The specified %s %s is not a zone of region %s.", z.name, z.id, req.RegionID)
			}
		}
		if lb.MasterZoneID == "" && len(zones) > 0 {
			lb.MasterZoneID = zones[0]
		}
		if lb.SlaveZoneID == "" && len(zones) > 1 {
			lb.SlaveZoneID = zones[1]
			if lb.SlaveZoneID == lb.MasterZoneID {
				lb.SlaveZoneID = zones[0]
			}
		}
		if addrType == "intranet" {
			addr, err := s.allocateClassicIP(lb.ID, p.String("Address"))
			if err != nil {
				return nil, err
			}
			lb.Address, lb.InternetChargeType = addr, "paybytraffic"
		} else {
			lb.Address = s.allocatePublicIP(lb.ID, ipVersion)
		}
	}
	if lb.SlaveZoneID == lb.MasterZoneID {
		lb.SlaveZoneID = ""
	}
	s.state.LoadBalancers[lb.ID] = lb
	s.state.Order = append(s.state.Order, lb.ID)
	s.state.OrderRegions = append(s.state.OrderRegions, lb.RegionID)
	if token != "" {
		s.state.ClientTokens[token] = &ClientTokenEntry{LoadBalancerID: lb.ID, Fingerprint: fp}
	}
	order := int64(0)
	if payType == "PrePay" {
		order = orderID()
	}
	return createResponse(lb, order), nil
}

func (s *Service) deleteLoadBalancer(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	if lb.DeleteProtection == "on" {
		return nil, api.Errorf(http.StatusBadRequest, "OperationDenied.DeleteProtectionIsOn", "The load balancer %s cannot be deleted because its delete protection is on.", lb.ID)
	}
	for id, g := range s.state.VServerGroups {
		if g.LoadBalancerID == lb.ID {
			delete(s.state.VServerGroups, id)
		}
	}
	for id, d := range s.state.DomainExtensions {
		if d.LoadBalancerID == lb.ID {
			delete(s.state.DomainExtensions, id)
		}
	}
	if lb.VSwitchID != "" {
		s.vpc.ReleasePrivateIP(lb.VSwitchID, lb.Address)
	} else {
		delete(s.state.PublicIPs, lb.Address)
	}
	delete(s.state.LoadBalancers, lb.ID)
	for i, id := range s.state.Order {
		if id == lb.ID {
			s.state.Order = append(s.state.Order[:i], s.state.Order[i+1:]...)
			if len(s.state.OrderRegions) > i {
				s.state.OrderRegions = append(s.state.OrderRegions[:i], s.state.OrderRegions[i+1:]...)
			}
			break
		}
	}
	return map[string]any{}, nil
}

// tagKV and tagList are the {Tags:{Tag:[{TagKey,TagValue}]}} shape.
type tagKV struct {
	TagKey   string `json:"TagKey"`
	TagValue string `json:"TagValue"`
}

type tagList struct {
	Tag []tagKV `json:"Tag"`
}

func tagKVs(tags []api.Tag) []tagKV {
	out := make([]tagKV, len(tags))
	for i, t := range tags {
		out[i] = tagKV{TagKey: t.Key, TagValue: t.Value}
	}
	return out
}

// lbItem is one load balancer as DescribeLoadBalancers lists it; a struct
// (not a map) because this is the hottest response of the emulator.
type lbItem struct {
	LoadBalancerID               string  `json:"LoadBalancerId"`
	LoadBalancerName             string  `json:"LoadBalancerName"`
	LoadBalancerStatus           string  `json:"LoadBalancerStatus"`
	Address                      string  `json:"Address"`
	AddressType                  string  `json:"AddressType"`
	AddressIPVersion             string  `json:"AddressIPVersion"`
	NetworkType                  string  `json:"NetworkType"`
	VpcID                        string  `json:"VpcId"`
	VSwitchID                    string  `json:"VSwitchId"`
	RegionID                     string  `json:"RegionId"`
	RegionIDAlias                string  `json:"RegionIdAlias"`
	MasterZoneID                 string  `json:"MasterZoneId"`
	SlaveZoneID                  string  `json:"SlaveZoneId"`
	LoadBalancerSpec             string  `json:"LoadBalancerSpec"`
	InstanceChargeType           string  `json:"InstanceChargeType"`
	InternetChargeType           string  `json:"InternetChargeType"`
	Bandwidth                    int     `json:"Bandwidth"`
	PayType                      string  `json:"PayType"`
	DeleteProtection             string  `json:"DeleteProtection"`
	ModificationProtectionStatus string  `json:"ModificationProtectionStatus"`
	ModificationProtectionReason string  `json:"ModificationProtectionReason"`
	ResourceGroupID              string  `json:"ResourceGroupId"`
	BusinessStatus               string  `json:"BusinessStatus"`
	CreateTime                   string  `json:"CreateTime"`
	CreateTimeStamp              int64   `json:"CreateTimeStamp"`
	Tags                         tagList `json:"Tags"`
}

func (lb *LoadBalancer) item() lbItem {
	return lbItem{
		LoadBalancerID: lb.ID, LoadBalancerName: lb.Name, LoadBalancerStatus: lb.Status,
		Address: lb.Address, AddressType: lb.AddressType, AddressIPVersion: lb.AddressIPVersion,
		NetworkType: lb.NetworkType, VpcID: lb.VpcID, VSwitchID: lb.VSwitchID,
		RegionID: lb.RegionID, RegionIDAlias: lb.RegionID, MasterZoneID: lb.MasterZoneID, SlaveZoneID: lb.SlaveZoneID,
		LoadBalancerSpec: lb.Spec, InstanceChargeType: lb.InstanceChargeType, InternetChargeType: lb.InternetChargeType,
		Bandwidth: lb.Bandwidth, PayType: lb.PayType, DeleteProtection: lb.DeleteProtection,
		ModificationProtectionStatus: lb.ModificationProtectionStatus, ModificationProtectionReason: lb.ModificationProtectionReason,
		ResourceGroupID: api.ResourceGroupOr(lb.ResourceGroupID), BusinessStatus: "Normal",
		CreateTime: fmtLBTime(lb.CreatedAt), CreateTimeStamp: lb.CreatedAt.UnixMilli(),
		Tags: tagList{Tag: tagKVs(lb.Tags)},
	}
}

type lbPage struct {
	LoadBalancer []lbItem `json:"LoadBalancer"`
}

// lbFilter is a parsed DescribeLoadBalancers query; empty fields match all.
type lbFilter struct {
	ids      map[string]bool
	eq       [][2]string // (field, value) pairs compared by lbField
	tags     []api.Tag
	serverLB map[string]bool
}

// lbFilterKeys maps the lower-cased DescribeLoadBalancers filter
// parameters to their canonical names, so a request's parameters are
// scanned once instead of once per filter.
var lbFilterKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"LoadBalancerName", "Address", "AddressType", "VpcId", "VSwitchId", "LoadBalancerStatus",
		"NetworkType", "AddressIPVersion", "MasterZoneId", "SlaveZoneId", "ResourceGroupId",
		"InternetChargeType", "PayType", "InstanceChargeType", "LoadBalancerId", "Tags", "ServerId",
	} {
		m[strings.ToLower(k)] = k
	}
	return m
}()

func lbField(lb *LoadBalancer, name string) string {
	switch name {
	case "LoadBalancerName":
		return lb.Name
	case "Address":
		return lb.Address
	case "AddressType":
		return lb.AddressType
	case "VpcId":
		return lb.VpcID
	case "VSwitchId":
		return lb.VSwitchID
	case "LoadBalancerStatus":
		return lb.Status
	case "NetworkType":
		return lb.NetworkType
	case "AddressIPVersion":
		return lb.AddressIPVersion
	case "MasterZoneId":
		return lb.MasterZoneID
	case "SlaveZoneId":
		return lb.SlaveZoneID
	case "ResourceGroupId":
		return api.ResourceGroupOr(lb.ResourceGroupID)
	case "InternetChargeType":
		return lb.InternetChargeType
	case "PayType":
		return lb.PayType
	case "InstanceChargeType":
		return lb.InstanceChargeType
	}
	return ""
}

func (s *Service) parseLBFilter(p api.Params) (*lbFilter, error) {
	f := &lbFilter{}
	var buf [64]byte
	var ids, tagsJSON, server string
	hasTagN := false
	for k, v := range p {
		if v == "" || len(k) > len(buf) {
			continue
		}
		lk := buf[:len(k)]
		for i := 0; i < len(k); i++ {
			c := k[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			lk[i] = c
		}
		name, ok := lbFilterKeys[string(lk)]
		if !ok {
			if len(lk) > 4 && string(lk[:4]) == "tag." {
				hasTagN = true
			}
			continue
		}
		switch name {
		case "LoadBalancerId":
			ids = v
		case "Tags":
			tagsJSON = v
		case "ServerId":
			server = v
		default:
			f.eq = append(f.eq, [2]string{name, v})
		}
	}
	if ids != "" {
		f.ids = map[string]bool{}
		for _, id := range strings.Split(ids, ",") {
			if id = strings.TrimSpace(id); id != "" {
				f.ids[id] = true
			}
		}
	}
	if tagsJSON != "" {
		var jsonTags []struct {
			TagKey   string `json:"TagKey"`
			TagValue string `json:"TagValue"`
		}
		if err := json.Unmarshal([]byte(tagsJSON), &jsonTags); err != nil {
			return nil, api.InvalidParameter("Tags", "The parameter Tags is not valid JSON: %v", err)
		}
		for _, t := range jsonTags {
			f.tags = append(f.tags, api.Tag{Key: t.TagKey, Value: t.TagValue})
		}
	}
	if hasTagN {
		f.tags = append(f.tags, p.Tags()...)
	}
	if len(f.tags) > 20 {
		return nil, api.InvalidParameter("Tag", "At most 20 tags can be used as a filter.")
	}
	if server != "" {
		f.serverLB = map[string]bool{}
		for _, lb := range s.state.LoadBalancers {
			for _, b := range lb.BackendServers {
				if b.ServerID == server {
					f.serverLB[lb.ID] = true
				}
			}
		}
		for _, g := range s.state.VServerGroups {
			for _, b := range g.Backends {
				if b.ServerID == server {
					f.serverLB[g.LoadBalancerID] = true
				}
			}
		}
	}
	return f, nil
}

func (f *lbFilter) empty() bool {
	return f.ids == nil && len(f.eq) == 0 && len(f.tags) == 0 && f.serverLB == nil
}

func (f *lbFilter) match(lb *LoadBalancer) bool {
	if f.ids != nil && !f.ids[lb.ID] {
		return false
	}
	for _, e := range f.eq {
		if lbField(lb, e[0]) != e[1] {
			return false
		}
	}
	if f.serverLB != nil && !f.serverLB[lb.ID] {
		return false
	}
	return api.MatchTags(lb.Tags, f.tags)
}

func (s *Service) describeLoadBalancers(req *api.Request) (map[string]any, error) {
	p := req.Params
	pageNumber, err := p.Int("PageNumber", 1)
	if err != nil {
		return nil, err
	}
	pageSize, err := p.Int("PageSize", 10)
	if err != nil {
		return nil, err
	}
	if pageNumber < 1 {
		return nil, api.InvalidParameter("PageNumber", "The parameter PageNumber must be at least 1.")
	}
	if pageSize < 1 || pageSize > 100 {
		return nil, api.InvalidParameter("PageSize", "The parameter PageSize must be between 1 and 100.")
	}
	f, err := s.parseLBFilter(p)
	if err != nil {
		return nil, err
	}
	start := (pageNumber - 1) * pageSize
	end := start + pageSize
	items := make([]lbItem, 0, min(pageSize, len(s.state.Order)))
	total := 0
	// Without filters only the region decides, and OrderRegions lets the
	// scan skip dereferencing load balancers outside the page.
	if f.empty() && len(s.state.OrderRegions) == len(s.state.Order) {
		for i, region := range s.state.OrderRegions {
			if region != req.RegionID {
				continue
			}
			if total >= start && total < end {
				items = append(items, s.state.LoadBalancers[s.state.Order[i]].item())
			}
			total++
		}
	} else {
		// One pass over the creation-ordered ids: count every match, build
		// only the requested page.
		for _, id := range s.state.Order {
			lb := s.state.LoadBalancers[id]
			if lb.RegionID != req.RegionID || !f.match(lb) {
				continue
			}
			if total >= start && total < end {
				items = append(items, lb.item())
			}
			total++
		}
	}
	return map[string]any{
		"LoadBalancers": lbPage{LoadBalancer: items},
		"PageNumber":    pageNumber,
		"PageSize":      pageSize,
		"TotalCount":    total,
	}, nil
}

type listenerPortProto struct {
	ListenerPort     int    `json:"ListenerPort"`
	ListenerProtocol string `json:"ListenerProtocol"`
	ListenerForward  string `json:"ListenerForward,omitempty"`
	ForwardPort      int    `json:"ForwardPort,omitempty"`
	Description      string `json:"Description"`
}

type listenerPortProtocal struct {
	ListenerPort     int    `json:"ListenerPort"`
	ListenerProtocal string `json:"ListenerProtocal"`
}

func (s *Service) describeLoadBalancerAttribute(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	data, err := json.Marshal(lb.item())
	if err != nil {
		return nil, fmt.Errorf("encode load balancer %s: %w", lb.ID, err)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode load balancer %s: %w", lb.ID, err)
	}
	ports := []int{}
	pp := []listenerPortProtocal{}
	ppo := []listenerPortProto{}
	for _, l := range lb.sortedListeners() {
		ports = append(ports, l.Port)
		pp = append(pp, listenerPortProtocal{ListenerPort: l.Port, ListenerProtocal: l.Protocol})
		e := listenerPortProto{ListenerPort: l.Port, ListenerProtocol: l.Protocol, Description: l.Config["Description"]}
		if l.Protocol == "http" {
			e.ListenerForward = l.Config["ListenerForward"]
			if e.ListenerForward == "on" {
				e.ForwardPort, _ = strconv.Atoi(l.Config["ForwardPort"])
			}
		}
		ppo = append(ppo, e)
	}
	backends := []map[string]any{}
	for _, b := range lb.BackendServers {
		backends = append(backends, map[string]any{
			"ServerId": b.ServerID, "ServerIp": b.ServerIP, "Weight": b.Weight, "Type": b.Type,
			"Description": b.Description, "VpcId": b.VpcID,
		})
	}
	raw["ListenerPorts"] = map[string]any{"ListenerPort": ports}
	raw["ListenerPortsAndProtocal"] = map[string]any{"ListenerPortAndProtocal": pp}
	raw["ListenerPortsAndProtocol"] = map[string]any{"ListenerPortAndProtocol": ppo}
	raw["BackendServers"] = map[string]any{"BackendServer": backends}
	raw["Labels"] = map[string]any{"Label": []string{}}
	raw["SupportPrivateLink"] = false
	return raw, nil
}

func (s *Service) setLoadBalancerName(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	name, err := req.Params.Required("LoadBalancerName")
	if err != nil {
		return nil, err
	}
	if err := validLBName(name); err != nil {
		return nil, err
	}
	lb.Name = name
	return map[string]any{}, nil
}

// lbSetter is the handler of a Set* call that sets one enumerated setting
// of a load balancer: the load balancer, then the required key, checked in
// the order the API checks, then set.
func (s *Service) lbSetter(key string, set func(req *api.Request, lb *LoadBalancer, v string) error, allowed ...string) api.Handler {
	return func(req *api.Request) (map[string]any, error) {
		lb, err := s.lb(req)
		if err != nil {
			return nil, err
		}
		if _, err := req.Params.Required(key); err != nil {
			return nil, err
		}
		v, err := req.Params.Enum(key, "", allowed...)
		if err != nil {
			return nil, err
		}
		if err := set(req, lb, v); err != nil {
			return nil, err
		}
		return map[string]any{}, nil
	}
}

func setStatus(_ *api.Request, lb *LoadBalancer, v string) error {
	lb.Status = v
	return nil
}

func setDeleteProtection(_ *api.Request, lb *LoadBalancer, v string) error {
	lb.DeleteProtection = v
	return nil
}

// setModificationProtection keeps the reason only while protection is on.
func setModificationProtection(req *api.Request, lb *LoadBalancer, v string) error {
	reason := req.Params.String("ModificationProtectionReason")
	if err := validName("ModificationProtectionReason", reason, 80); err != nil {
		return err
	}
	if v == "NonProtection" {
		reason = ""
	}
	lb.ModificationProtectionStatus, lb.ModificationProtectionReason = v, reason
	return nil
}

func (s *Service) modifyLoadBalancerInstanceSpec(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	if _, err := req.Params.Required("LoadBalancerSpec"); err != nil {
		return nil, err
	}
	spec, err := req.Params.Enum("LoadBalancerSpec", "", lbSpecs...)
	if err != nil {
		return nil, err
	}
	if lb.InstanceChargeType == "PayByCLCU" {
		return nil, errNotAllowed("The operation is not allowed because the instanceChargeType of loadbalancer is PayByCLCU.")
	}
	lb.Spec = spec
	return map[string]any{"OrderId": lbOrder(lb)}, nil
}

func lbOrder(lb *LoadBalancer) int64 {
	if lb.PayType == "PrePay" {
		return orderID()
	}
	return 0
}

func (s *Service) modifyLoadBalancerInternetSpec(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	if lb.AddressType != "internet" {
		return nil, errNotAllowed("The operation is not allowed because load balancer %s is not internet-facing.", lb.ID)
	}
	charge, err := req.Params.Enum("InternetChargeType", lb.InternetChargeType, facts.Enum("slb:InternetChargeType")...)
	if err != nil {
		return nil, err
	}
	bw, err := req.Params.IntRange("Bandwidth", lb.Bandwidth, bandwidthMin, bandwidthMax)
	if err != nil {
		return nil, err
	}
	lb.InternetChargeType, lb.Bandwidth = charge, bw
	return map[string]any{"OrderId": lbOrder(lb)}, nil
}

func (s *Service) modifyLoadBalancerInstanceChargeType(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	if _, err := p.Required("InstanceChargeType"); err != nil {
		return nil, err
	}
	charge, err := p.Enum("InstanceChargeType", "", "PayBySpec", "PayByCLCU")
	if err != nil {
		return nil, err
	}
	spec, err := p.Enum("LoadBalancerSpec", "", lbSpecs...)
	if err != nil {
		return nil, err
	}
	if charge == "PayBySpec" && spec == "" {
		return nil, api.MissingParameter("LoadBalancerSpec")
	}
	internet, err := p.Enum("InternetChargeType", lb.InternetChargeType, "paybytraffic", "paybybandwidth")
	if err != nil {
		return nil, err
	}
	bw, err := p.IntRange("Bandwidth", lb.Bandwidth, bandwidthMin, bandwidthMax)
	if err != nil {
		return nil, err
	}
	if charge == "PayByCLCU" {
		spec = ""
	}
	lb.InstanceChargeType, lb.Spec, lb.Bandwidth = charge, spec, bw
	if lb.AddressType == "internet" {
		lb.InternetChargeType = internet
	}
	return map[string]any{}, nil
}
