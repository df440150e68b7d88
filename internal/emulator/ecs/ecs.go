// Package ecs emulates the ECS OpenAPI (version 2014-05-26): instances,
// network interfaces, security groups and tags.
package ecs

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2014-05-26"

// Instance statuses as DescribeInstances reports them.
const (
	StatusPending  = "Pending"
	StatusRunning  = "Running"
	StatusStarting = "Starting"
	StatusStopping = "Stopping"
	StatusStopped  = "Stopped"
)

// Service is the emulated ECS product.
type Service struct {
	st    *store.Store
	vpc   *vpc.Service
	state *State
	// sgUsers name the resources of other products that are in a security
	// group (NLB load balancers), which DeleteSecurityGroup must refuse.
	sgUsers []func(sgID string) []string
}

// State is the ECS part of the emulated cloud; exported fields only so it
// round-trips through encoding/json for --state persistence.
type State struct {
	// Instances are the ECS instances by id (i-...).
	Instances map[string]*Instance `json:"instances"`
	// ENIs are the network interfaces by id (eni-...), primary ones included.
	ENIs map[string]*ENI `json:"enis"`
	// SecurityGroups are the security groups by id (sg-...).
	SecurityGroups map[string]*SecurityGroup `json:"securityGroups"`
	// Ledger holds the ClientToken records and the creation counter.
	api.Ledger
}

// Instance is an ECS instance in a VPC.
type Instance struct {
	// ID is the InstanceId (i-...).
	ID string `json:"id"`
	// Name is the InstanceName.
	Name string `json:"name"`
	// HostName is the guest host name (default iZ<id>Z); the kubelet's Node
	// name.
	HostName string `json:"hostName"`
	// Description is the instance's free-text Description.
	Description string `json:"description"`
	// InstanceType is the instance type, e.g. ecs.g7.large.
	InstanceType string `json:"instanceType"`
	// ImageID is the image the instance was created from (ImageId).
	ImageID string `json:"imageId"`
	// RegionID is the instance's region, e.g. cn-hangzhou.
	RegionID string `json:"regionId"`
	// ZoneID is the zone of its vSwitch, e.g. cn-hangzhou-h.
	ZoneID string `json:"zoneId"`
	// VpcID is the VPC of its vSwitch (vpc-...).
	VpcID string `json:"vpcId"`
	// VSwitchID is the vSwitch of its primary ENI (vsw-...).
	VSwitchID string `json:"vswitchId"`
	// PublicIP is the optional public address (PublicIpAddress), not an EIP.
	PublicIP string `json:"publicIp,omitempty"`
	// ChargeType is InstanceChargeType: PrePaid or PostPaid.
	ChargeType string `json:"chargeType"`
	// SpotStrategy is NoSpot, SpotWithPriceLimit or SpotAsPriceGo.
	SpotStrategy string `json:"spotStrategy"`
	// InternetChargeType is PayByTraffic or PayByBandwidth.
	InternetChargeType string `json:"internetChargeType"`
	// InternetMaxBandwidthOut is the public outbound bandwidth cap in Mbit/s
	// (0 without PublicIP).
	InternetMaxBandwidthOut int `json:"internetMaxBandwidthOut"`
	// PrimaryENIID is the instance's primary network interface (eni-...).
	PrimaryENIID string `json:"primaryEniId"`
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// instance).
	Tags []api.Tag `json:"tags,omitempty"`
	// Status is the settled status (Running or Stopped); Transition is shown
	// instead until TransitionUntil, so reads never need to mutate.
	Status string `json:"status"`
	// Transition is the transient status (Pending, Starting, Stopping)
	// reported until TransitionUntil.
	Transition string `json:"transition,omitempty"`
	// TransitionUntil is when Transition gives way to Status (after
	// store.DelayECSInstance).
	TransitionUntil time.Time `json:"transitionUntil"`
	// StoppedMode is KeepCharging or StopCharging from the last StopInstances
	// (empty: KeepCharging).
	StoppedMode string `json:"stoppedMode,omitempty"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// StartedAt is the last start (StartTime).
	StartedAt time.Time `json:"startedAt"`
	// ListeningPorts, when set, are the only ports that listen on the
	// instance in the health model (health.go); nil: every port listens.
	ListeningPorts *[]int `json:"listeningPorts,omitempty"`
	// Seq orders instances by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// ENI is an elastic network interface.
type ENI struct {
	// ID is the NetworkInterfaceId (eni-...).
	ID string `json:"id"`
	// Name is the NetworkInterfaceName.
	Name string `json:"name"`
	// Description is the ENI's free-text Description.
	Description string `json:"description"`
	// InstanceID is the instance the ENI is attached to (i-...); empty when
	// detached.
	InstanceID string `json:"instanceId"`
	// VpcID is the VPC of the ENI's vSwitch (vpc-...).
	VpcID string `json:"vpcId"`
	// VSwitchID is the vSwitch the ENI's addresses come from (vsw-...).
	VSwitchID string `json:"vswitchId"`
	// ZoneID is the zone of that vSwitch.
	ZoneID string `json:"zoneId"`
	// RegionID is the ENI's region.
	RegionID string `json:"regionId"`
	// MAC is the MacAddress, aa:bb:cc:dd:ee:ff.
	MAC string `json:"mac"`
	// Type is Primary, Secondary, Trunk or Member.
	Type string `json:"type"`
	// PrivateIPs are the ENI's private addresses; the first is the primary
	// one.
	PrivateIPs []string `json:"privateIps"`
	// IPv6s are the ENI's IPv6 addresses, from its vSwitch's /64.
	IPv6s []string `json:"ipv6s,omitempty"`
	// SecurityGroupIDs are the security groups (sg-...) the ENI is in.
	SecurityGroupIDs []string `json:"securityGroupIds"`
	// SourceDestCheck drops traffic not addressed to or from the ENI's own
	// IPs when true.
	SourceDestCheck bool `json:"sourceDestCheck"`
	// DeleteOnRelease deletes the ENI with its instance (true for primary
	// ENIs).
	DeleteOnRelease bool `json:"deleteOnRelease"`
	// Tags are set by TagResources with ResourceType eni.
	Tags []api.Tag `json:"tags,omitempty"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// Seq orders ENIs by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// SecurityGroup is an ECS security group of a VPC.
type SecurityGroup struct {
	// ID is the SecurityGroupId (sg-...).
	ID string `json:"id"`
	// Name is the SecurityGroupName.
	Name string `json:"name"`
	// Description is the group's free-text Description.
	Description string `json:"description"`
	// VpcID is the VPC the group belongs to (vpc-...).
	VpcID string `json:"vpcId"`
	// RegionID is the group's region.
	RegionID string `json:"regionId"`
	// Type is SecurityGroupType: normal or enterprise.
	Type string `json:"type"`
	// Rules are the group's rules, in the order authorized.
	Rules []*Rule `json:"rules"`
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// securitygroup).
	Tags []api.Tag `json:"tags,omitempty"`
	// ResourceGroupID is the resource group (rg-...; api.DefaultResourceGroupID
	// when the request named none, or for seeded groups).
	ResourceGroupID string `json:"resourceGroupId,omitempty"`
	// CreatedAt is the CreationTime.
	CreatedAt time.Time `json:"createdAt"`
	// Seq orders groups by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// Rule is one security group rule.
type Rule struct {
	// ID is the SecurityGroupRuleId (sgr-...).
	ID string `json:"id"`
	// Direction is ingress or egress.
	Direction string `json:"direction"`
	// IPProtocol is TCP, UDP, ICMP, ICMPv6, GRE or ALL.
	IPProtocol string `json:"ipProtocol"`
	// PortRange is "from/to", e.g. 80/80, or -1/-1 for protocols without
	// ports.
	PortRange string `json:"portRange"`
	// SourceCidrIP is the IPv4 source CIDR (SourceCidrIp).
	SourceCidrIP string `json:"sourceCidrIp,omitempty"`
	// Ipv6SourceCidrIP is the IPv6 source CIDR (Ipv6SourceCidrIp).
	Ipv6SourceCidrIP string `json:"ipv6SourceCidrIp,omitempty"`
	// SourceGroupID is the source security group (sg-...), instead of a CIDR.
	SourceGroupID string `json:"sourceGroupId,omitempty"`
	// SourcePrefixListID is the source prefix list (pl-...), instead of a
	// CIDR.
	SourcePrefixListID string `json:"sourcePrefixListId,omitempty"`
	// DestCidrIP is the destination CIDR (DestCidrIp), optional.
	DestCidrIP string `json:"destCidrIp,omitempty"`
	// SourcePortRange is the source "from/to" port range, optional.
	SourcePortRange string `json:"sourcePortRange,omitempty"`
	// Policy is accept (default) or drop.
	Policy string `json:"policy"`
	// Priority is "1" (highest, default) to "100", as a string like the API.
	Priority string `json:"priority"`
	// NicType is intranet (default) or internet.
	NicType string `json:"nicType"`
	// Description is the rule's free-text Description.
	Description string `json:"description,omitempty"`
	// CreatedAt is the rule's CreateTime.
	CreatedAt time.Time `json:"createdAt"`
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	st.Instances = map[string]*Instance{}
	st.ENIs = map[string]*ENI{}
	st.SecurityGroups = map[string]*SecurityGroup{}
	st.ResetLedger()
}

// New registers the ECS state with st and hands VPC the lookups it needs
// (route next hops, dependency checks).
func New(st *store.Store, v *vpc.Service) (*Service, error) {
	s := &Service{st: st, vpc: v, state: &State{}}
	if err := st.Register("ecs", s.state); err != nil {
		return nil, fmt.Errorf("register ecs state: %w", err)
	}
	v.SetComputeHooks(vpc.ComputeHooks{
		InstanceVPC: func(id string) (string, bool) {
			i, ok := s.state.Instances[id]
			if !ok {
				return "", false
			}
			return i.VpcID, true
		},
		ENIVPC: func(id string) (string, bool) {
			e, ok := s.state.ENIs[id]
			if !ok {
				return "", false
			}
			return e.VpcID, true
		},
		InstancesInVSwitch: func(id string) int {
			return api.Count(s.state.ENIs, func(e *ENI) bool { return e.VSwitchID == id })
		},
		InstancesInVPC: func(id string) int {
			return api.Count(s.state.Instances, func(i *Instance) bool { return i.VpcID == id })
		},
		SecurityGroupsInVPC: func(id string) int {
			return api.Count(s.state.SecurityGroups, func(g *SecurityGroup) bool { return g.VpcID == id })
		},
	})
	return s, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	handlers := map[string]api.Handler{
		"DescribeInstances":               s.describeInstances,
		"DescribeInstanceAttribute":       s.describeInstanceAttribute,
		"DescribeTags":                    s.describeTags,
		"RunInstances":                    s.runInstances,
		"StartInstances":                  s.startInstances,
		"StopInstances":                   s.stopInstances,
		"DeleteInstance":                  s.deleteInstance,
		"DeleteInstances":                 s.deleteInstances,
		"DescribeNetworkInterfaces":       s.describeNetworkInterfaces,
		"ModifyNetworkInterfaceAttribute": s.modifyNetworkInterfaceAttribute,
		"AssignIpv6Addresses":             s.assignIpv6Addresses,
		"UnassignIpv6Addresses":           s.unassignIpv6Addresses,
		"CreateSecurityGroup":             s.createSecurityGroup,
		"DescribeSecurityGroups":          s.describeSecurityGroups,
		"DescribeSecurityGroupAttribute":  s.describeSecurityGroupAttribute,
		"AuthorizeSecurityGroup":          s.authorizeSecurityGroup,
		"RevokeSecurityGroup":             s.revokeSecurityGroup,
		"ModifySecurityGroupRule":         s.modifySecurityGroupRule,
		"ModifySecurityGroupAttribute":    s.modifySecurityGroupAttribute,
		"DeleteSecurityGroup":             s.deleteSecurityGroup,
		"TagResources":                    s.tagResources,
		"UntagResources":                  s.untagResources,
		"ListTagResources":                s.listTagResources,
	}
	return api.Product{Name: "ecs", Version: Version, Host: "ecs.aliyuncs.com", Actions: api.Actions(handlers, nil),
		RegionRequired: true, UnknownRegion: api.ECSUnknownRegion,
		// ecs-20140526/v7's request models of these have no RegionId.
		RegionOptional: map[string]bool{"DescribeInstanceAttribute": true, "DeleteInstance": true}}
}

// Identity returns what the metadata service serves for an instance (""
// means the first instance created); the caller holds the store's lock.
func (s *Service) Identity(instanceID string) (api.InstanceIdentity, bool) {
	var inst *Instance
	if instanceID == "" {
		for _, i := range s.state.Instances {
			if inst == nil || i.Seq < inst.Seq {
				inst = i
			}
		}
	} else {
		inst = s.state.Instances[instanceID]
	}
	if inst == nil {
		return api.InstanceIdentity{}, false
	}
	id := api.InstanceIdentity{
		InstanceID: inst.ID, RegionID: inst.RegionID, ZoneID: inst.ZoneID, VpcID: inst.VpcID, VSwitchID: inst.VSwitchID,
		PrivateIPv4: s.primaryIP(inst), Hostname: inst.HostName, InstanceType: inst.InstanceType,
	}
	if v, ok := s.vpc.VPC(inst.VpcID); ok {
		id.VpcCIDRBlock = v.CIDRBlock
	}
	if e, ok := s.state.ENIs[inst.PrimaryENIID]; ok {
		id.MAC = e.MAC
	}
	return id, true
}

// ecsTime is the minute-precision timestamp format of ECS responses.
func ecsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04Z") }

// checkTagKeys validates tag keys the way ECS does for Tag.N parameters.
func checkTagKeys(tags []api.Tag) error {
	for _, t := range tags {
		if t.Key == "" || len(t.Key) > 128 || strings.HasPrefix(t.Key, "aliyun") || strings.HasPrefix(t.Key, "acs:") ||
			strings.HasPrefix(t.Key, "http://") || strings.HasPrefix(t.Key, "https://") {
			return api.Errorf(http.StatusBadRequest, "InvalidTagKey.Malformed", "The specified Tag.n.Key %q is not valid.", t.Key)
		}
		if len(t.Value) > 128 || strings.HasPrefix(t.Value, "http://") || strings.HasPrefix(t.Value, "https://") {
			return api.Errorf(http.StatusBadRequest, "InvalidTagValue.Malformed", "The specified Tag.n.Value %q is not valid.", t.Value)
		}
	}
	return nil
}

// mergeTags adds or overwrites tags and enforces the per-resource quota.
func (s *Service) mergeTags(have, add []api.Tag) ([]api.Tag, error) {
	out := api.MergeTags(have, add)
	if q := s.st.Settings().Quota(store.QuotaTagsPerResource); len(out) > q {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "The specified tags are beyond the permitted range: a resource carries at most %d tags.", q)
	}
	return out, nil
}

// jsonIDs decodes a JSON-array parameter such as InstanceIds (at most max).
func jsonIDs(p api.Params, key string, max int) ([]string, error) {
	var ids []string
	if _, err := p.JSON(key, &ids); err != nil {
		return nil, api.Errorf(http.StatusBadRequest, "Invalid"+key+".Malformed", "The specified parameter %s is not a valid JSON array of strings.", key)
	}
	if len(ids) > max {
		return nil, api.Errorf(http.StatusBadRequest, "Invalid"+key+".Malformed", "The specified parameter %s holds %d entries; at most %d are allowed.", key, len(ids), max)
	}
	return ids, nil
}

// pagedList answers a Describe* listing: list in creation order (seq),
// the paging fields, and the page's views under set.item (e.g.
// Instances.Instance). Pages hold 10 items by default, at most maxPage by
// PageSize or maxResults by MaxResults.
func pagedList[T any](p api.Params, list []T, seq func(T) int64, maxPage, maxResults int, set, item string, view func(T) map[string]any) (map[string]any, error) {
	list, keys := api.SortByKey(list, func(t T) string { return api.SeqKey(seq(t)) })
	out, start, end, err := paging(p, keys, 10, maxPage, maxResults)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, end-start)
	for _, t := range list[start:end] {
		items = append(items, view(t))
	}
	out[set] = map[string]any{item: items}
	return out, nil
}

// paging serves both paging styles: MaxResults/NextToken when either is
// sent, else PageNumber/PageSize. A NextToken is returned in both styles so
// that clients looping on either field terminate.
// keys are the listing's Cursor keys (api.SortByKey). PageNumber pages are
// offsets, as the cloud's are; NextToken is a cursor (api.Params.Cursor).
func paging(p api.Params, keys []string, defSize, maxPage, maxResults int) (out map[string]any, start, end int, err error) {
	total := len(keys)
	if p.Has("MaxResults") || p.String("NextToken") != "" {
		var max int
		var next string
		max, start, end, next, err = p.Cursor(keys, defSize, maxResults, "MaxResults")
		if err != nil {
			return nil, 0, 0, err
		}
		// The response models have no MaxResults (SDK v1.63.107 and
		// ecs-20140526/v7 alike), so only the token and count go back.
		_ = max
		return map[string]any{"NextToken": next, "TotalCount": total}, start, end, nil
	}
	num, size, start, end, err := p.Page(total, defSize, maxPage)
	if err != nil {
		return nil, 0, 0, err
	}
	next := ""
	if end < total && end > 0 {
		next = api.CursorAfter(keys[end-1])
	}
	return map[string]any{"PageNumber": num, "PageSize": size, "TotalCount": total, "NextToken": next}, start, end, nil
}
