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
}

// State is the ECS part of the emulated cloud; exported fields only so it
// round-trips through encoding/json for --state persistence.
type State struct {
	Instances      map[string]*Instance      `json:"instances"`
	ENIs           map[string]*ENI           `json:"enis"`
	SecurityGroups map[string]*SecurityGroup `json:"securityGroups"`
	// Tokens remember ClientToken results per action for idempotency.
	Tokens api.TokenRecords `json:"tokens"`
	// Seq orders resources by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// Instance is an ECS instance in a VPC.
type Instance struct {
	ID                      string    `json:"id"`
	Name                    string    `json:"name"`
	HostName                string    `json:"hostName"`
	Description             string    `json:"description"`
	InstanceType            string    `json:"instanceType"`
	ImageID                 string    `json:"imageId"`
	RegionID                string    `json:"regionId"`
	ZoneID                  string    `json:"zoneId"`
	VpcID                   string    `json:"vpcId"`
	VSwitchID               string    `json:"vswitchId"`
	PublicIP                string    `json:"publicIp,omitempty"`
	ChargeType              string    `json:"chargeType"`
	SpotStrategy            string    `json:"spotStrategy"`
	InternetChargeType      string    `json:"internetChargeType"`
	InternetMaxBandwidthOut int       `json:"internetMaxBandwidthOut"`
	PrimaryENIID            string    `json:"primaryEniId"`
	Tags                    []api.Tag `json:"tags,omitempty"`
	// Status is the settled status (Running or Stopped); Transition is shown
	// instead until TransitionUntil, so reads never need to mutate.
	Status          string    `json:"status"`
	Transition      string    `json:"transition,omitempty"`
	TransitionUntil time.Time `json:"transitionUntil"`
	StoppedMode     string    `json:"stoppedMode,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	StartedAt       time.Time `json:"startedAt"`
	Seq             int64     `json:"seq"`
}

// ENI is an elastic network interface.
type ENI struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	Description      string    `json:"description"`
	InstanceID       string    `json:"instanceId"`
	VpcID            string    `json:"vpcId"`
	VSwitchID        string    `json:"vswitchId"`
	ZoneID           string    `json:"zoneId"`
	RegionID         string    `json:"regionId"`
	MAC              string    `json:"mac"`
	Type             string    `json:"type"`
	PrivateIPs       []string  `json:"privateIps"`
	SecurityGroupIDs []string  `json:"securityGroupIds"`
	SourceDestCheck  bool      `json:"sourceDestCheck"`
	DeleteOnRelease  bool      `json:"deleteOnRelease"`
	Tags             []api.Tag `json:"tags,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
	Seq              int64     `json:"seq"`
}

// SecurityGroup is an ECS security group of a VPC.
type SecurityGroup struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	VpcID       string    `json:"vpcId"`
	RegionID    string    `json:"regionId"`
	Type        string    `json:"type"`
	Rules       []*Rule   `json:"rules"`
	Tags        []api.Tag `json:"tags,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	Seq         int64     `json:"seq"`
}

// Rule is one security group rule.
type Rule struct {
	ID                 string    `json:"id"`
	Direction          string    `json:"direction"`
	IPProtocol         string    `json:"ipProtocol"`
	PortRange          string    `json:"portRange"`
	SourceCidrIP       string    `json:"sourceCidrIp,omitempty"`
	Ipv6SourceCidrIP   string    `json:"ipv6SourceCidrIp,omitempty"`
	SourceGroupID      string    `json:"sourceGroupId,omitempty"`
	SourcePrefixListID string    `json:"sourcePrefixListId,omitempty"`
	DestCidrIP         string    `json:"destCidrIp,omitempty"`
	SourcePortRange    string    `json:"sourcePortRange,omitempty"`
	Policy             string    `json:"policy"`
	Priority           string    `json:"priority"`
	NicType            string    `json:"nicType"`
	Description        string    `json:"description,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
}

// Reset empties the state, as on a fresh account.
func (st *State) Reset() {
	st.Instances = map[string]*Instance{}
	st.ENIs = map[string]*ENI{}
	st.SecurityGroups = map[string]*SecurityGroup{}
	st.Tokens = api.TokenRecords{}
	st.Seq = 0
}

func (st *State) next() int64 {
	st.Seq++
	return st.Seq
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
			n := 0
			for _, e := range s.state.ENIs {
				if e.VSwitchID == id {
					n++
				}
			}
			return n
		},
		InstancesInVPC: func(id string) int {
			n := 0
			for _, i := range s.state.Instances {
				if i.VpcID == id {
					n++
				}
			}
			return n
		},
		SecurityGroupsInVPC: func(id string) int {
			n := 0
			for _, g := range s.state.SecurityGroups {
				if g.VpcID == id {
					n++
				}
			}
			return n
		},
	})
	return s, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	handlers := map[string]api.Handler{
		"DescribeInstances":               s.describeInstances,
		"RunInstances":                    s.runInstances,
		"StartInstances":                  s.startInstances,
		"StopInstances":                   s.stopInstances,
		"DeleteInstance":                  s.deleteInstance,
		"DeleteInstances":                 s.deleteInstances,
		"DescribeNetworkInterfaces":       s.describeNetworkInterfaces,
		"ModifyNetworkInterfaceAttribute": s.modifyNetworkInterfaceAttribute,
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
	return api.Product{Name: "ecs", Version: Version, Host: "ecs.aliyuncs.com", Actions: api.Actions(handlers, nil)}
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

// paging serves both paging styles: MaxResults/NextToken when either is
// sent, else PageNumber/PageSize. A NextToken is returned in both styles so
// that clients looping on either field terminate.
func paging(p api.Params, total, defSize, maxPage, maxResults int) (out map[string]any, start, end int, err error) {
	if p.Has("MaxResults") || p.String("NextToken") != "" {
		var max int
		var next string
		max, start, end, next, err = p.Token(total, defSize, maxResults, "MaxResults")
		if err != nil {
			return nil, 0, 0, err
		}
		return map[string]any{"NextToken": next, "MaxResults": max, "TotalCount": total}, start, end, nil
	}
	num, size, start, end, err := p.Page(total, defSize, maxPage)
	if err != nil {
		return nil, 0, 0, err
	}
	next := ""
	if end < total {
		next = fmt.Sprint(end)
	}
	return map[string]any{"PageNumber": num, "PageSize": size, "TotalCount": total, "NextToken": next}, start, end, nil
}
