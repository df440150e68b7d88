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
	VPCs         map[string]*VPC        `json:"vpcs"`
	VSwitches    map[string]*VSwitch    `json:"vswitches"`
	RouteTables  map[string]*RouteTable `json:"routeTables"`
	RouteEntries map[string]*RouteEntry `json:"routeEntries"`
	EIPs         map[string]*EIP        `json:"eips"`
	// Tokens remember ClientToken results per action for idempotency.
	Tokens api.TokenRecords `json:"tokens"`
	// Seq orders resources by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// VPC is a virtual private cloud with its vRouter.
type VPC struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	Description        string    `json:"description"`
	CIDRBlock          string    `json:"cidrBlock"`
	RegionID           string    `json:"regionId"`
	VRouterID          string    `json:"vRouterId"`
	SystemRouteTableID string    `json:"systemRouteTableId"`
	IsDefault          bool      `json:"isDefault"`
	Tags               []api.Tag `json:"tags,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
	Seq                int64     `json:"seq"`
	// RouteBusyUntil is when the last route write in this VPC finishes; a
	// route write before then is a TaskConflict.
	RouteBusyUntil time.Time `json:"routeBusyUntil"`
}

// VSwitch is a subnet of a VPC in one zone.
type VSwitch struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	VpcID        string          `json:"vpcId"`
	ZoneID       string          `json:"zoneId"`
	CIDRBlock    string          `json:"cidrBlock"`
	RegionID     string          `json:"regionId"`
	RouteTableID string          `json:"routeTableId"`
	Tags         []api.Tag       `json:"tags,omitempty"`
	UsedIPs      map[string]bool `json:"usedIps"`
	CreatedAt    time.Time       `json:"createdAt"`
	Seq          int64           `json:"seq"`
}

// RouteTable is a route table of a VPC's vRouter.
type RouteTable struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	VpcID     string    `json:"vpcId"`
	VRouterID string    `json:"vRouterId"`
	Type      string    `json:"type"`
	RegionID  string    `json:"regionId"`
	CreatedAt time.Time `json:"createdAt"`
	Seq       int64     `json:"seq"`
}

// RouteEntry is one route of a route table.
type RouteEntry struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	TableID     string    `json:"tableId"`
	DestCIDR    string    `json:"destCidr"`
	Type        string    `json:"type"`
	NextHopType string    `json:"nextHopType"`
	NextHopID   string    `json:"nextHopId"`
	ReadyAt     time.Time `json:"readyAt"`
	ModifiedAt  time.Time `json:"modifiedAt"`
	Seq         int64     `json:"seq"`
}

// EIP is an elastic IP address.
type EIP struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	IPAddress          string    `json:"ipAddress"`
	Bandwidth          string    `json:"bandwidth"`
	InternetChargeType string    `json:"internetChargeType"`
	RegionID           string    `json:"regionId"`
	InstanceID         string    `json:"instanceId"`
	InstanceType       string    `json:"instanceType"`
	AllocatedAt        time.Time `json:"allocatedAt"`
	Seq                int64     `json:"seq"`
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	st.VPCs = map[string]*VPC{}
	st.VSwitches = map[string]*VSwitch{}
	st.RouteTables = map[string]*RouteTable{}
	st.RouteEntries = map[string]*RouteEntry{}
	st.EIPs = map[string]*EIP{}
	st.Tokens = api.TokenRecords{}
	st.Seq = 0
}

func (st *State) next() int64 {
	st.Seq++
	return st.Seq
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
		"DescribeEipAddresses":      s.describeEipAddresses,
	}
	return api.Product{Name: "vpc", Version: Version, Host: "vpc.aliyuncs.com", Actions: api.Actions(handlers, nil)}
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
