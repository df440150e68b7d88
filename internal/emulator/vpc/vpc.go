// Package vpc emulates the VPC OpenAPI (version 2016-04-28): VPCs with their
// vRouter and route tables, vSwitches, route entries and EIPs.
package vpc

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Version is the API version this package serves.
const Version = "2016-04-28"

// Route table and route entry types as the API reports them.
const (
	TypeSystem = "System"
	TypeCustom = "Custom"
)

// ErrCodeVSwitchFull is the code AllocatePrivateIP answers when a vSwitch has
// no free address; SLB reports it verbatim, ECS translates it.
const ErrCodeVSwitchFull = "VSwitchAvailableIpNotExist"

// Service is the emulated VPC product.
type Service struct {
	st      *store.Store
	state   *State
	compute ComputeHooks
}

// State is the VPC part of the emulated cloud; exported fields only so it
// round-trips through encoding/json for --state persistence.
type State struct {
	// VPCs are the VPCs by id (vpc-...).
	VPCs map[string]*VPC `json:"vpcs"`
	// VSwitches are the vSwitches by id (vsw-...).
	VSwitches map[string]*VSwitch `json:"vswitches"`
	// RouteTables are the route tables by id (vtb-...), system and custom.
	RouteTables map[string]*RouteTable `json:"routeTables"`
	// RouteEntries are the route entries of every table by id (rte-...).
	RouteEntries map[string]*RouteEntry `json:"routeEntries"`
	// EIPs are the elastic IPs by allocation id (eip-...).
	EIPs map[string]*EIP `json:"eips"`
	// Ledger holds the ClientToken records and the creation counter.
	api.Ledger
}

// VPC is a virtual private cloud with its vRouter.
type VPC struct {
	// ID is the VpcId (vpc-...).
	ID string `json:"id"`
	// Name is the VpcName.
	Name string `json:"name"`
	// Description is the VPC's free-text Description.
	Description string `json:"description"`
	// CIDRBlock is the VPC's IPv4 CidrBlock, e.g. 192.168.0.0/16.
	CIDRBlock string `json:"cidrBlock"`
	// IPv6CIDRBlock is the VPC's IPv6 /56 when IPv6 is enabled, else empty.
	IPv6CIDRBlock string `json:"ipv6CidrBlock,omitempty"`
	// RegionID is the VPC's region.
	RegionID string `json:"regionId"`
	// VRouterID is the VPC's vRouter (vrt-...), created with it.
	VRouterID string `json:"vRouterId"`
	// SystemRouteTableID is the vRouter's system route table (vtb-...),
	// created with the VPC.
	SystemRouteTableID string `json:"systemRouteTableId"`
	// IsDefault marks the region's default VPC.
	IsDefault bool `json:"isDefault"`
	// Tags are the VPC's tags (Tag.N on CreateVpc; the DescribeVpcs Tag
	// filter).
	Tags []api.Tag `json:"tags,omitempty"`
	// ResourceGroupID is the resource group (rg-...; api.DefaultResourceGroupID
	// when the request named none, or for seeded VPCs).
	ResourceGroupID string `json:"resourceGroupId,omitempty"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// Seq orders VPCs by creation, for stable listings.
	Seq int64 `json:"seq"`
	// RouteBusyUntil is when the last route write in this VPC finishes; a
	// route write before then is a TaskConflict.
	RouteBusyUntil time.Time `json:"routeBusyUntil"`
}

// VSwitch is a subnet of a VPC in one zone.
type VSwitch struct {
	// ID is the VSwitchId (vsw-...).
	ID string `json:"id"`
	// Name is the VSwitchName.
	Name string `json:"name"`
	// Description is the vSwitch's free-text Description.
	Description string `json:"description"`
	// VpcID is the VPC the vSwitch belongs to (vpc-...).
	VpcID string `json:"vpcId"`
	// ZoneID is the vSwitch's zone: the region plus a letter, e.g.
	// cn-hangzhou-h.
	ZoneID string `json:"zoneId"`
	// CIDRBlock is the vSwitch's CIDR, inside the VPC's.
	CIDRBlock string `json:"cidrBlock"`
	// IPv6CIDRBlock is the vSwitch's IPv6 /64 (of the VPC's /56), empty
	// without IPv6.
	IPv6CIDRBlock string `json:"ipv6CidrBlock,omitempty"`
	// UsedIPv6 are the IPv6 addresses allocated in the vSwitch, kept apart
	// from UsedIPs so AvailableIpAddressCount stays the IPv4 count.
	UsedIPv6 map[string]bool `json:"usedIpv6,omitempty"`
	// RegionID is the vSwitch's region.
	RegionID string `json:"regionId"`
	// RouteTableID is the route table the vSwitch is bound to (the VPC's
	// system table unless set).
	RouteTableID string `json:"routeTableId"`
	// Tags are the vSwitch's tags (Tag.N on CreateVSwitch; the
	// DescribeVSwitches Tag filter).
	Tags []api.Tag `json:"tags,omitempty"`
	// UsedIPs are the addresses allocated in the vSwitch (ENIs, load
	// balancers); AvailableIpAddressCount is computed from them.
	UsedIPs map[string]bool `json:"usedIps"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// Seq orders vSwitches by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// RouteTable is a route table of a VPC's vRouter.
type RouteTable struct {
	// ID is the RouteTableId (vtb-...).
	ID string `json:"id"`
	// Name is the RouteTableName.
	Name string `json:"name"`
	// VpcID is the VPC of the table's vRouter (vpc-...).
	VpcID string `json:"vpcId"`
	// VRouterID is the vRouter the table belongs to (vrt-...).
	VRouterID string `json:"vRouterId"`
	// Type is TypeSystem (one per VPC) or TypeCustom.
	Type string `json:"type"`
	// RegionID is the table's region.
	RegionID string `json:"regionId"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// Seq orders tables by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// RouteEntry is one route of a route table.
type RouteEntry struct {
	// ID is the RouteEntryId (rte-...).
	ID string `json:"id"`
	// Name is the RouteEntryName.
	Name string `json:"name"`
	// Description is the entry's free-text Description (the CCM marks its
	// entries here).
	Description string `json:"description"`
	// TableID is the route table holding the entry (vtb-...).
	TableID string `json:"tableId"`
	// DestCIDR is the DestinationCidrBlock, unique per table.
	DestCIDR string `json:"destCidr"`
	// Type is TypeSystem (vSwitch and service routes, not deletable) or
	// TypeCustom.
	Type string `json:"type"`
	// NextHopType is Instance or NetworkInterface for custom entries, local
	// or service for system ones.
	NextHopType string `json:"nextHopType"`
	// NextHopID is the next hop's instance (i-...) or ENI (eni-...); empty
	// for system entries.
	NextHopID string `json:"nextHopId"`
	// ReadyAt is when the entry turns from Pending to Available.
	ReadyAt time.Time `json:"readyAt"`
	// ModifyBusyUntil is when the entry's last ModifyRouteEntry finishes;
	// another ModifyRouteEntry of the entry before then is a TaskConflict.
	ModifyBusyUntil time.Time `json:"modifyBusyUntil"`
	// ModifiedAt is the entry's last change.
	ModifiedAt time.Time `json:"modifiedAt"`
	// Seq orders entries by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// EIP is an elastic IP address.
type EIP struct {
	// ID is the AllocationId (eip-...).
	ID string `json:"id"`
	// Name is the EIP's Name.
	Name string `json:"name"`
	// IPAddress is the public IPv4 address, unique in the cloud.
	IPAddress string `json:"ipAddress"`
	// Bandwidth is the peak bandwidth in Mbit/s, a string as the API reports
	// it.
	Bandwidth string `json:"bandwidth"`
	// InternetChargeType is the EIP's billing: PayByTraffic (seeded EIPs) or
	// PayByBandwidth.
	InternetChargeType string `json:"internetChargeType"`
	// RegionID is the EIP's region.
	RegionID string `json:"regionId"`
	// InstanceID is the resource the EIP is bound to (i-..., lb-...); empty
	// when unbound.
	InstanceID string `json:"instanceId"`
	// InstanceType is the bound resource's type: EcsInstance or SlbInstance
	// (empty when unbound).
	InstanceType string `json:"instanceType"`
	// AllocatedAt is the AllocationTime.
	AllocatedAt time.Time `json:"allocatedAt"`
	// Seq orders EIPs by allocation, for stable listings.
	Seq int64 `json:"seq"`
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	st.VPCs = map[string]*VPC{}
	st.VSwitches = map[string]*VSwitch{}
	st.RouteTables = map[string]*RouteTable{}
	st.RouteEntries = map[string]*RouteEntry{}
	st.EIPs = map[string]*EIP{}
	st.ResetLedger()
}

// New registers the VPC state with st.
func New(st *store.Store) (*Service, error) {
	s := &Service{st: st, state: &State{}}
	if err := st.Register("vpc", s.state); err != nil {
		return nil, fmt.Errorf("register vpc state: %w", err)
	}
	return s, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	handlers := map[string]api.Handler{
		"CreateVpc":                 s.createVpc,
		"DeleteVpc":                 s.deleteVpc,
		"DescribeVpcs":              s.describeVpcs,
		"DescribeVpcAttribute":      s.describeVpcAttribute,
		"CreateVSwitch":             s.createVSwitch,
		"DeleteVSwitch":             s.deleteVSwitch,
		"DescribeVSwitches":         s.describeVSwitches,
		"DescribeVSwitchAttributes": s.describeVSwitchAttributes,
		"DescribeRouteTableList":    s.describeRouteTableList,
		"DescribeRouteEntryList":    s.describeRouteEntryList,
		"CreateRouteEntry":          s.createRouteEntry,
		"CreateRouteEntries":        s.createRouteEntries,
		"DeleteRouteEntry":          s.deleteRouteEntry,
		"DeleteRouteEntries":        s.deleteRouteEntries,
		"ModifyRouteEntry":          s.modifyRouteEntry,
		"DescribeEipAddresses":      s.describeEipAddresses,
	}
	return api.Product{Name: "vpc", Version: Version, Host: "vpc.aliyuncs.com", Actions: api.Actions(handlers, nil),
		RegionRequired: true, UnknownRegion: api.VPCUnknownRegion,
		// vpc-20160428/v6's request models make RegionId optional here.
		RegionOptional: map[string]bool{"DeleteVpc": true, "CreateVSwitch": true, "DeleteVSwitch": true, "DescribeVSwitches": true,
			"DescribeVSwitchAttributes": true, "CreateRouteEntry": true, "DeleteRouteEntry": true}}
}

// vpcTime is the timestamp format of VPC responses.
func vpcTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// validTags checks Tag.N of a create call: keys present and unique, at most 20.
func validTags(tags []api.Tag) error {
	if len(tags) > 20 {
		return api.Errorf(http.StatusBadRequest, "SizeLimitExceeded.TagNum", "The number of tags exceeds the upper limit of 20.")
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if t.Key == "" {
			return api.Errorf(http.StatusBadRequest, "MissingParam.TagKey", "The parameter TagKey is mandatory.")
		}
		if strings.HasPrefix(t.Key, "aliyun") || strings.HasPrefix(t.Key, "acs:") {
			return api.Errorf(http.StatusBadRequest, "IllegalParam.TagKey", "The param of TagKey %q is illegal.", t.Key)
		}
		if seen[t.Key] {
			return api.Errorf(http.StatusBadRequest, "IllegalParam.TagKey", "The tag key %q is duplicated.", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
}

// exists reports whether a resource a ClientToken created still exists; a
// token whose resources are gone is spent.
func (s *Service) exists(id string) bool {
	st := s.state
	if _, ok := st.VPCs[id]; ok {
		return true
	}
	if _, ok := st.VSwitches[id]; ok {
		return true
	}
	_, ok := st.RouteEntries[id]
	return ok
}

// splitIDs splits a comma-separated id list, ignoring blanks.
func splitIDs(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
