package nlb

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Load balancer statuses as GetLoadBalancerAttribute reports them.
const (
	LBProvisioning = "Provisioning"
	LBConfiguring  = "Configuring"
	LBActive       = "Active"
	// LBDeleting is reported from DeleteLoadBalancer until its job ends;
	// the LB, its listeners and its security-group joins last until then.
	LBDeleting = "Deleting"
	// LBCreateFailed is the end state of an LB whose create job failed:
	// it keeps its addresses, refuses changes and can only be deleted.
	LBCreateFailed = "CreateFailed"
)

// Limits of the NLB product that are not tunable quotas.
const (
	maxSecurityGroups   = 4
	maxListLoadBalancer = 20
)

// How many zones a load balancer takes.
var minZones, maxZones = facts.Range("nlb:ZoneMappings")

// LoadBalancer is one NLB instance.
type LoadBalancer struct {
	// ID is the LoadBalancerId (nlb-...).
	ID string `json:"id"`
	// Name is the LoadBalancerName.
	Name string `json:"name"`
	// Type is the LoadBalancerType, always Network.
	Type string `json:"type"`
	// AddressType is Internet or Intranet (IPv4).
	AddressType string `json:"addressType"`
	// AddressIPVersion is ipv4 (default) or DualStack.
	AddressIPVersion string `json:"addressIpVersion"`
	// IPv6AddressType is Internet or Intranet for DualStack load balancers;
	// empty for ipv4.
	IPv6AddressType string `json:"ipv6AddressType,omitempty"`
	// VpcID is the VPC the load balancer serves (vpc-...).
	VpcID string `json:"vpcId"`
	// RegionID is the load balancer's region.
	RegionID string `json:"regionId"`
	// AccountID is the owning account (the caller's), reported as AliUid.
	AccountID string `json:"accountId"`
	// ResourceGroupID is the resource group (rg-...; the account default when
	// not given).
	ResourceGroupID string `json:"resourceGroupId"`
	// PayType is the billing PayType, always PostPay.
	PayType string `json:"payType"`
	// BandwidthPackageID is the shared bandwidth package (cbwp-...) of an
	// internet load balancer, if any.
	BandwidthPackageID string `json:"bandwidthPackageId,omitempty"`
	// CrossZoneEnabled lets each zone forward to servers in every zone
	// (default true).
	CrossZoneEnabled bool `json:"crossZoneEnabled"`
	// TrafficAffinityEnabled prefers servers in the client's zone.
	TrafficAffinityEnabled bool `json:"trafficAffinityEnabled"`
	// Cps is the new-connections-per-second limit, 0 (unlimited) to 1000000.
	Cps int `json:"cps"`
	// Zones are the zone mappings, 2 to 10, one per zone.
	Zones []*ZoneMapping `json:"zones"`
	// SecurityGroupIDs are the security groups (sg-...) of the VPC the load
	// balancer joined, at most 4.
	SecurityGroupIDs []string `json:"securityGroupIds"`
	// DeletionProtection refuses DeleteLoadBalancer while enabled.
	DeletionProtection Protection `json:"deletionProtection"`
	// ModificationProtection has Status NonProtection or ConsoleProtection
	// (guards console changes only).
	ModificationProtection Protection `json:"modificationProtection"`
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// loadbalancer).
	Tags []api.Tag `json:"tags,omitempty"`
	// CreatedAt is the CreateTime.
	CreatedAt time.Time `json:"createdAt"`
	// jobTimes end the Provisioning status, an LB-level update's
	// Configuring status and the lock of the last job on the LB or its
	// listeners.
	jobTimes
	// deletion is the LB's deletion job: Deleting before, gone after (a
	// failed create rolls back the same way).
	deletion
	// CreateFailed marks an LB whose create job failed (LBCreateFailed
	// once ReadyAt passed).
	CreateFailed bool `json:"createFailed,omitempty"`
	// Seq orders load balancers by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// Protection is a deletion or modification protection setting; Status is
// used by modification protection only (NonProtection or ConsoleProtection).
type Protection struct {
	// Enabled is whether the protection is on.
	Enabled bool `json:"enabled"`
	// Status is NonProtection or ConsoleProtection (modification
	// protection only; empty for deletion protection).
	Status string `json:"status,omitempty"`
	// Reason is the user's reason for enabling it, shown as is.
	Reason string `json:"reason,omitempty"`
	// EnabledTime is when it was last enabled (zero when off).
	EnabledTime time.Time `json:"enabledTime"`
}

// ZoneMapping is the LB's presence in one zone: its vSwitch and addresses.
type ZoneMapping struct {
	// ZoneID is the zone, e.g. cn-hangzhou-h.
	ZoneID string `json:"zoneId"`
	// VSwitchID is the load balancer's vSwitch in that zone (vsw-...).
	VSwitchID string `json:"vswitchId"`
	// EniID is the load balancer's network interface in the zone (eni-...).
	EniID string `json:"eniId"`
	// PrivateIPv4 is the zone's private address, from the vSwitch
	// (PrivateIPv4Address).
	PrivateIPv4 string `json:"privateIpv4"`
	// PublicIPv4 is the zone's public address for Internet load balancers.
	PublicIPv4 string `json:"publicIpv4,omitempty"`
	// AllocationID is the EIP (eip-...) behind PublicIPv4: given on create or
	// allocated.
	AllocationID string `json:"allocationId,omitempty"`
	// IPv6 is the zone's IPv6 address for DualStack load balancers.
	IPv6 string `json:"ipv6,omitempty"`
}

func (lb *LoadBalancer) status(now time.Time) string {
	switch {
	case !lb.DeletedAt.IsZero():
		return LBDeleting
	case now.Before(lb.ReadyAt):
		return LBProvisioning
	case lb.CreateFailed:
		return LBCreateFailed
	case now.Before(lb.ConfiguringUntil):
		return LBConfiguring
	}
	return LBActive
}

// jobTimes are the times the jobs on a load balancer or server group set;
// its statuses and locks are computed from them, so reads never mutate.
type jobTimes struct {
	// ReadyAt ends the creation status (Provisioning, Creating).
	ReadyAt time.Time `json:"readyAt"`
	// ConfiguringUntil ends the Configuring status of an update.
	ConfiguringUntil time.Time `json:"configuringUntil"`
	// BusyUntil ends the lock of the last job (Conflict.Lock before).
	BusyUntil time.Time `json:"busyUntil"`
}

// deletion is when a resource's deletion (or rollback) ends.
type deletion struct {
	// DeletedAt, when set, is when the deletion ends; zero for a live
	// resource.
	DeletedAt time.Time `json:"deletedAt,omitzero"`
}

// gone reports whether the deletion finished by now: every read treats
// the resource as absent, and the next mutating call removes it.
func (d deletion) gone(now time.Time) bool {
	return !d.DeletedAt.IsZero() && !now.Before(d.DeletedAt)
}

func (lb *LoadBalancer) dnsName() string { return lb.ID + "." + lb.RegionID + ".nlb.aliyuncs.com" }

// lb returns a load balancer of the request's region.
func (s *Service) lb(req *api.Request, id string) (*LoadBalancer, error) {
	lb, ok := s.state.LoadBalancers[id]
	if !ok || lb.RegionID != req.RegionID || lb.gone(req.Now) {
		return nil, errLBNotFound(id)
	}
	return lb, nil
}

// lbParam reads the required LoadBalancerId and returns that LB.
func (s *Service) lbParam(req *api.Request) (*LoadBalancer, error) {
	return api.Lookup(req, "LoadBalancerId", s.lb)
}

// lbForUpdate returns an LB a mutation may touch: not Provisioning and not
// locked by a job in flight.
func (s *Service) lbForUpdate(req *api.Request) (*LoadBalancer, error) {
	lb, err := s.lbParam(req)
	if err != nil {
		return nil, err
	}
	return lb, s.checkLBMutable(req, lb)
}

func (s *Service) checkLBMutable(req *api.Request, lb *LoadBalancer) error {
	if req.Now.Before(lb.ReadyAt) || !lb.DeletedAt.IsZero() || lb.CreateFailed {
		return errIncorrectStatus("loadbalancer", lb.ID)
	}
	if req.Now.Before(lb.BusyUntil) {
		return errLock(lb.ID)
	}
	return nil
}

// lockLB starts a job on the LB and locks it until the job is done; LB-level
// updates also show the LB as Configuring meanwhile.
func (s *Service) lockLB(req *api.Request, lb *LoadBalancer, configuring bool) *Job {
	j := s.startJob(req, "loadbalancer", lb.ID)
	lb.BusyUntil = j.DoneAt
	if configuring {
		lb.ConfiguringUntil = j.DoneAt
	}
	return j
}

// zoneSpec is one validated ZoneMappings.N entry.
type zoneSpec struct {
	ZoneID, VSwitchID, PrivateIP, AllocationID string
}

// parseZones validates ZoneMappings.N for an LB in vpcID: 2 to 10 distinct
// zones, each with a vSwitch of that VPC in that zone.
func (s *Service) parseZones(req *api.Request, vpcID string) ([]zoneSpec, error) {
	objs := req.Params.Objects("ZoneMappings")
	if len(objs) == 0 {
		return nil, api.MissingParameter("ZoneMappings")
	}
	if len(objs) < minZones || len(objs) > maxZones {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidZones", "The number of zones must be between %d and %d, got %d.", minZones, maxZones, len(objs))
	}
	seen := map[string]bool{}
	out := make([]zoneSpec, 0, len(objs))
	for i, o := range objs {
		z := zoneSpec{ZoneID: o.String("ZoneId"), VSwitchID: o.String("VSwitchId"), PrivateIP: o.String("PrivateIPv4Address"), AllocationID: o.String("AllocationId")}
		if z.ZoneID == "" {
			return nil, api.MissingParameter(fmt.Sprintf("ZoneMappings.%d.ZoneId", i+1))
		}
		if z.VSwitchID == "" {
			return nil, api.MissingParameter(fmt.Sprintf("ZoneMappings.%d.VSwitchId", i+1))
		}
		if seen[z.ZoneID] {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidZones", "The zone %s is specified more than once.", z.ZoneID)
		}
		seen[z.ZoneID] = true
		vsw, ok := s.vpc.VSwitch(z.VSwitchID)
		if !ok || vsw.RegionID != req.RegionID || vsw.VpcID != vpcID {
			return nil, errVSwitchNotFound(z.VSwitchID)
		}
		if vsw.ZoneID != z.ZoneID {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidZones", "The vSwitch %s is in zone %s, not in zone %s.", z.VSwitchID, vsw.ZoneID, z.ZoneID)
		}
		out = append(out, z)
	}
	return out, nil
}

// allocateZone reserves the addresses of one zone mapping.
func (s *Service) allocateZone(z zoneSpec, addressType, ipVersion string) (*ZoneMapping, error) {
	ip, err := s.vpc.AllocatePrivateIP(z.VSwitchID, z.PrivateIP)
	if err != nil {
		// Returned as is: it is the *api.Error the client must see.
		return nil, err
	}
	m := &ZoneMapping{ZoneID: z.ZoneID, VSwitchID: z.VSwitchID, EniID: store.NewID("eni"), PrivateIPv4: ip}
	if addressType == "Internet" {
		s.setPublic(m, z.AllocationID)
	}
	if ipVersion == "DualStack" {
		s.state.AddrSeq++
		n := s.state.AddrSeq
		m.IPv6 = fmt.Sprintf("2408:4005:3ff:%x::%x", (n>>16)&0xffff, n&0xffff)
	}
	return m, nil
}

// setPublic gives a zone mapping a public address: an EIP the caller names,
// or one the cloud allocates.
func (s *Service) setPublic(m *ZoneMapping, allocationID string) {
	s.state.AddrSeq++
	n := s.state.AddrSeq
	m.PublicIPv4 = fmt.Sprintf("47.%d.%d.%d", 96+(n>>16)%32, (n>>8)&0xff, 1+n%254)
	if allocationID == "" {
		allocationID = store.NewID("eip")
	}
	m.AllocationID = allocationID
}

func (s *Service) releaseZone(m *ZoneMapping) { s.vpc.ReleasePrivateIP(m.VSwitchID, m.PrivateIPv4) }

// allocateZones reserves every zone's addresses, undoing the reservations
// made so far when one fails.
func (s *Service) allocateZones(specs []zoneSpec, addressType, ipVersion string) ([]*ZoneMapping, error) {
	var out []*ZoneMapping
	for _, z := range specs {
		m, err := s.allocateZone(z, addressType, ipVersion)
		if err != nil {
			for _, done := range out {
				s.releaseZone(done)
			}
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// checkSecurityGroups verifies that every group exists in vpcID.
func (s *Service) checkSecurityGroups(ids []string, vpcID string) error {
	for _, id := range ids {
		v, ok := s.ecs.SecurityGroupVPC(id)
		if !ok {
			return api.NotFound("ResourceNotFound.SecurityGroup", "The specified resource %s is not found.", id)
		}
		if v != vpcID {
			return api.Errorf(http.StatusBadRequest, "InvalidParameter", "The security group %s does not belong to VPC %s.", id, vpcID)
		}
	}
	return nil
}

func (s *Service) createLoadBalancer(req *api.Request) (map[string]any, error) {
	p := req.Params
	lbType, err := canonical(p, "LoadBalancerType", "Network", "Network")
	if err != nil {
		return nil, err
	}
	addrType, err := requiredCanonical(p, "AddressType", facts.Enum("nlb:AddressType")...)
	if err != nil {
		return nil, err
	}
	ipVersion, err := canonical(p, "AddressIpVersion", "ipv4", facts.Enum("nlb:AddressIpVersion")...)
	if err != nil {
		return nil, err
	}
	vpcID, err := s.requestedVPCID(req)
	if err != nil {
		return nil, err
	}
	zones, err := s.parseZones(req, vpcID)
	if err != nil {
		return nil, err
	}
	name := p.String("LoadBalancerName")
	if err := validName("LoadBalancerName", name); err != nil {
		return nil, err
	}
	payType, err := canonical(p, "LoadBalancerBillingConfig.PayType", "PostPay", "PostPay")
	if err != nil {
		return nil, err
	}
	delProt, err := p.Bool("DeletionProtectionConfig.Enabled", false)
	if err != nil {
		return nil, err
	}
	modStatus, err := canonical(p, "ModificationProtectionConfig.Status", "NonProtection", "NonProtection", "ConsoleProtection")
	if err != nil {
		return nil, err
	}
	tags := p.Tags()
	if err := s.validTags(tags); err != nil {
		return nil, err
	}
	sgs, err := s.requestedSecurityGroups(p, vpcID)
	if err != nil {
		return nil, err
	}
	bwp := p.String("BandwidthPackageId")
	if bwp != "" && !strings.HasPrefix(bwp, "cbwp-") {
		return nil, api.NotFound("ResourceNotFound.BandwidthPackage", "The specified resource %s is not found.", bwp)
	}
	count := api.Count(s.state.LoadBalancers, func(lb *LoadBalancer) bool { return lb.RegionID == req.RegionID })
	if q := s.st.Settings().Quota(store.QuotaNLBInstances); count >= q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.LoadBalancersNum", "The number of load balancers exceeds the quota of %d.", q)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	mappings, err := s.allocateZones(zones, addrType, ipVersion)
	if err != nil {
		return nil, err
	}
	lb := &LoadBalancer{
		ID: store.NewID("nlb"), Name: name, Type: lbType, AddressType: addrType, AddressIPVersion: ipVersion,
		VpcID: vpcID, RegionID: req.RegionID, AccountID: req.AccountID, ResourceGroupID: p.String("ResourceGroupId"),
		PayType: payType, BandwidthPackageID: bwp, CrossZoneEnabled: true, Zones: mappings, SecurityGroupIDs: sgs,
		ModificationProtection: Protection{Status: modStatus, Reason: p.String("ModificationProtectionConfig.Reason")},
		Tags:                   tags, CreatedAt: req.Now, jobTimes: jobTimes{ReadyAt: req.Now.Add(s.st.Settings().Delay(store.DelayNLBProvisioning))}, Seq: s.state.next(),
	}
	if ipVersion == "DualStack" {
		lb.IPv6AddressType = "Intranet"
	}
	if lb.ResourceGroupID == "" {
		lb.ResourceGroupID = api.DefaultResourceGroupID
	}
	if delProt {
		lb.DeletionProtection = Protection{Enabled: true, Reason: p.String("DeletionProtectionConfig.Reason"), EnabledTime: req.Now}
	}
	if modStatus == "ConsoleProtection" {
		lb.ModificationProtection.Enabled = true
		lb.ModificationProtection.EnabledTime = req.Now
	}
	s.state.LoadBalancers[lb.ID] = lb
	// The SDK model has a JobId: the creation's job, done when the load
	// balancer leaves Provisioning. The CCM polls the status instead, so
	// both must agree.
	job := s.startJob(req, "loadbalancer", lb.ID)
	job.DoneAt = lb.ReadyAt
	return map[string]any{"LoadbalancerId": lb.ID, "JobId": job.ID, "OrderId": 200000000000000 + lb.Seq}, nil
}

// lbView renders an LB as GetLoadBalancerAttribute and ListLoadBalancers do;
// the two differ only in the spelling of tag fields.
func (s *Service) lbView(lb *LoadBalancer, now time.Time, getStyle bool) map[string]any {
	zones := make([]map[string]any, 0, len(lb.Zones))
	for _, z := range lb.Zones {
		addr := map[string]any{
			"EniId": z.EniID, "PrivateIPv4Address": z.PrivateIPv4, "PrivateIPv4HcStatus": "Healthy",
		}
		if z.PublicIPv4 != "" {
			addr["PublicIPv4Address"] = z.PublicIPv4
			addr["AllocationId"] = z.AllocationID
		}
		if z.IPv6 != "" {
			addr["Ipv6Address"] = z.IPv6
			addr["PrivateIPv6HcStatus"] = "Healthy"
		}
		zones = append(zones, map[string]any{
			"ZoneId": z.ZoneID, "VSwitchId": z.VSwitchID, "Status": "Active",
			"LoadBalancerAddresses": []map[string]any{addr},
		})
	}
	del := map[string]any{"Enabled": lb.DeletionProtection.Enabled}
	if lb.DeletionProtection.Enabled {
		del["Reason"] = lb.DeletionProtection.Reason
		del["EnabledTime"] = nlbTime(lb.DeletionProtection.EnabledTime)
	}
	mod := map[string]any{"Status": lb.ModificationProtection.Status}
	if lb.ModificationProtection.Enabled {
		mod["Reason"] = lb.ModificationProtection.Reason
		mod["EnabledTime"] = nlbTime(lb.ModificationProtection.EnabledTime)
	}
	out := map[string]any{
		"RegionId": lb.RegionID, "LoadBalancerId": lb.ID, "LoadBalancerName": lb.Name, "LoadBalancerType": lb.Type,
		"AddressType": lb.AddressType, "AddressIpVersion": lb.AddressIPVersion,
		"LoadBalancerStatus": lb.status(now), "LoadBalancerBusinessStatus": "Normal",
		"VpcId": lb.VpcID, "CreateTime": nlbTime(lb.CreatedAt), "ResourceGroupId": api.ResourceGroupOr(lb.ResourceGroupID),
		"DNSName": lb.dnsName(), "CrossZoneEnabled": lb.CrossZoneEnabled, "TrafficAffinityEnabled": lb.TrafficAffinityEnabled,
		"Cps": lb.Cps, "SecurityGroupIds": nonNil(lb.SecurityGroupIDs),
		"LoadBalancerBillingConfig":    map[string]any{"PayType": lb.PayType},
		"DeletionProtectionConfig":     del,
		"ModificationProtectionConfig": mod,
		"OperationLocks":               []map[string]any{},
		"ZoneMappings":                 zones,
	}
	if lb.IPv6AddressType != "" {
		out["Ipv6AddressType"] = lb.IPv6AddressType
	}
	if lb.BandwidthPackageID != "" {
		out["BandwidthPackageId"] = lb.BandwidthPackageID
	}
	if getStyle {
		out["Tags"] = api.TagMaps(lb.Tags, "TagKey", "TagValue")
	} else {
		out["Tags"] = api.TagMaps(lb.Tags, "Key", "Value")
		out["AliUid"] = aliUID(lb.AccountID)
		// ListLoadBalancers' items have no Cps (SDK v1.63.107 and
		// nlb-20220430/v3 alike); GetLoadBalancerAttribute has it.
		delete(out, "Cps")
	}
	return out
}

func (s *Service) getLoadBalancerAttribute(req *api.Request) (map[string]any, error) {
	lb, err := s.lbParam(req)
	if err != nil {
		return nil, err
	}
	return s.lbView(lb, req.Now, true), nil
}

// sortedLBs lists the LBs that exist at now, oldest first.
func (s *Service) sortedLBs(now time.Time) []*LoadBalancer {
	all := store.ByCreation(s.state.LoadBalancers, func(lb *LoadBalancer) int64 { return lb.Seq })
	return slices.DeleteFunc(all, func(lb *LoadBalancer) bool { return lb.gone(now) })
}

// lbHasAddress reports whether an LB answers on addr (any of its IPs).
func lbHasAddress(lb *LoadBalancer, addr string) bool {
	for _, z := range lb.Zones {
		if z.PrivateIPv4 == addr || z.PublicIPv4 == addr || z.IPv6 == addr {
			return true
		}
	}
	return false
}

func (s *Service) listLoadBalancers(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids := p.List("LoadBalancerIds")
	if len(ids) > maxListLoadBalancer {
		return nil, api.InvalidParameter("LoadBalancerIds", "The number of LoadBalancerIds exceeds the limit of %d.", maxListLoadBalancer)
	}
	names, vpcs := p.List("LoadBalancerNames"), p.List("VpcIds")
	tags := p.Tags()
	exact := map[string]string{
		"AddressType": p.String("AddressType"), "AddressIpVersion": p.String("AddressIpVersion"),
		"LoadBalancerStatus": p.String("LoadBalancerStatus"), "LoadBalancerType": p.String("LoadBalancerType"),
		"LoadBalancerBusinessStatus": p.String("LoadBalancerBusinessStatus"), "ResourceGroupId": p.String("ResourceGroupId"),
		"DNSName": p.String("DNSName"), "Ipv6AddressType": p.String("Ipv6AddressType"),
	}
	zone, address := p.String("ZoneId"), p.String("Address")
	var match []*LoadBalancer
	for _, lb := range s.sortedLBs(req.Now) {
		if lb.RegionID != req.RegionID ||
			(len(ids) > 0 && !slices.Contains(ids, lb.ID)) ||
			(len(names) > 0 && !slices.Contains(names, lb.Name)) ||
			(len(vpcs) > 0 && !slices.Contains(vpcs, lb.VpcID)) ||
			!api.MatchTags(lb.Tags, tags) ||
			(address != "" && !lbHasAddress(lb, address)) {
			continue
		}
		if zone != "" {
			found := false
			for _, z := range lb.Zones {
				found = found || z.ZoneID == zone
			}
			if !found {
				continue
			}
		}
		have := map[string]string{
			"AddressType": lb.AddressType, "AddressIpVersion": lb.AddressIPVersion, "LoadBalancerStatus": lb.status(req.Now),
			"LoadBalancerType": lb.Type, "LoadBalancerBusinessStatus": "Normal", "ResourceGroupId": api.ResourceGroupOr(lb.ResourceGroupID),
			"DNSName": lb.dnsName(), "Ipv6AddressType": lb.IPv6AddressType,
		}
		ok := true
		for k, want := range exact {
			if want != "" && !strings.EqualFold(want, have[k]) {
				ok = false
				break
			}
		}
		if ok {
			match = append(match, lb)
		}
	}
	return cursorList(p, match, func(lb *LoadBalancer) string { return api.SeqKey(lb.Seq) }, "LoadBalancers",
		func(lb *LoadBalancer) map[string]any { return s.lbView(lb, req.Now, false) })
}

func (s *Service) deleteLoadBalancer(req *api.Request) (map[string]any, error) {
	lb, err := s.lbParam(req)
	if err != nil {
		return nil, err
	}
	if lb.DeletionProtection.Enabled {
		return nil, api.Errorf(http.StatusBadRequest, "OperationDenied.DeletionProtectionEnabled", "The operation is not allowed because deletion protection of load balancer %s is enabled.", lb.ID)
	}
	if req.Now.Before(lb.ReadyAt) {
		return nil, api.Errorf(http.StatusBadRequest, "ResourceInCreating.loadbalancer", "The load balancer %s is being created.", lb.ID)
	}
	if req.Now.Before(lb.BusyUntil) {
		return nil, errLock(lb.ID)
	}
	if !lb.DeletedAt.IsZero() {
		return nil, errIncorrectStatus("loadbalancer", lb.ID)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	// Deletion is a job, as the cloud's (Terraform's alicloud_nlb_load_balancer
	// waits for its JobId to succeed): the LB reports Deleting and stays
	// locked, and its listeners keep their server groups in use and its
	// security-group joins hold, until the job ends (sweep removes them).
	j := s.lockLB(req, lb, false)
	lb.DeletedAt = j.DoneAt
	return map[string]any{"JobId": j.ID}, nil
}

// sweep removes what finished deleting by now: LBs past their deletion job
// with their listeners (releasing the LB's addresses), and listeners past
// theirs. It runs under the write lock at every mutating call; reads skip
// such resources on their own (gone), so a read never has to mutate.
func (s *Service) sweep(now time.Time) {
	for id, lb := range s.state.LoadBalancers {
		if !lb.gone(now) {
			continue
		}
		for lid, l := range s.state.Listeners {
			if l.LoadBalancerID == id {
				delete(s.state.Listeners, lid)
			}
		}
		for _, z := range lb.Zones {
			s.releaseZone(z)
		}
		delete(s.state.LoadBalancers, id)
	}
	for id, l := range s.state.Listeners {
		if l.gone(now) {
			delete(s.state.Listeners, id)
		}
	}
	for id, g := range s.state.ServerGroups {
		if g.gone(now) {
			delete(s.state.ServerGroups, id)
		}
	}
}

func (s *Service) updateLoadBalancerAttribute(req *api.Request) (map[string]any, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	name := p.String("LoadBalancerName")
	if err := validName("LoadBalancerName", name); err != nil {
		return nil, err
	}
	cross, err := p.Bool("CrossZoneEnabled", lb.CrossZoneEnabled)
	if err != nil {
		return nil, err
	}
	affinity, err := p.Bool("TrafficAffinityEnabled", lb.TrafficAffinityEnabled)
	if err != nil {
		return nil, err
	}
	cps, err := p.IntRange("Cps", lb.Cps, cpsMin, cpsMax)
	if err != nil {
		return nil, err
	}
	sgs, err := s.requestedSecurityGroups(p, lb.VpcID)
	if err != nil {
		return nil, err
	}
	return s.reconfigureLB(req, lb, func() {
		if name != "" {
			lb.Name = name
		}
		lb.CrossZoneEnabled, lb.TrafficAffinityEnabled, lb.Cps = cross, affinity, cps
		if len(sgs) > 0 {
			lb.SecurityGroupIDs = sgs
		}
	})
}

// reconfigureLB applies change to lb unless the request is a dry run, and
// answers the LB-level job that then holds it Configuring and locked.
func (s *Service) reconfigureLB(req *api.Request, lb *LoadBalancer, change func()) (map[string]any, error) {
	if err := dryRun(req); err != nil {
		return nil, err
	}
	change()
	return map[string]any{"JobId": s.lockLB(req, lb, true).ID}, nil
}

func (s *Service) updateLoadBalancerZones(req *api.Request) (map[string]any, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, err
	}
	specs, err := s.parseZones(req, lb.VpcID)
	if err != nil {
		return nil, err
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	old := map[string]*ZoneMapping{}
	for _, z := range lb.Zones {
		old[z.ZoneID] = z
	}
	var (
		kept  = map[string]bool{}
		fresh []zoneSpec
	)
	for _, z := range specs {
		if o, ok := old[z.ZoneID]; ok && o.VSwitchID == z.VSwitchID && (z.PrivateIP == "" || z.PrivateIP == o.PrivateIPv4) {
			kept[z.ZoneID] = true
			continue
		}
		fresh = append(fresh, z)
	}
	added, err := s.allocateZones(fresh, lb.AddressType, lb.AddressIPVersion)
	if err != nil {
		return nil, err
	}
	byZone := map[string]*ZoneMapping{}
	for _, m := range added {
		byZone[m.ZoneID] = m
	}
	for _, z := range lb.Zones {
		if !kept[z.ZoneID] {
			s.releaseZone(z)
		}
	}
	zones := make([]*ZoneMapping, 0, len(specs))
	for _, z := range specs {
		if kept[z.ZoneID] {
			zones = append(zones, old[z.ZoneID])
		} else {
			zones = append(zones, byZone[z.ZoneID])
		}
	}
	lb.Zones = zones
	return map[string]any{"JobId": s.lockLB(req, lb, true).ID}, nil
}

func (s *Service) updateLoadBalancerAddressTypeConfig(req *api.Request) (map[string]any, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, err
	}
	addrType, err := requiredCanonical(req.Params, "AddressType", facts.Enum("nlb:AddressType")...)
	if err != nil {
		return nil, err
	}
	if addrType == lb.AddressType {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectStatus.loadbalancer", "The address type of load balancer %s is already %s.", lb.ID, addrType)
	}
	eips := map[string]string{}
	for i, o := range req.Params.Objects("ZoneMappings") {
		zone := o.String("ZoneId")
		if zone == "" {
			return nil, api.MissingParameter(fmt.Sprintf("ZoneMappings.%d.ZoneId", i+1))
		}
		found := false
		for _, z := range lb.Zones {
			found = found || z.ZoneID == zone
		}
		if !found {
			return nil, api.Errorf(http.StatusBadRequest, "InvalidZones", "The load balancer %s is not in zone %s.", lb.ID, zone)
		}
		eips[zone] = o.String("AllocationId")
	}
	return s.reconfigureLB(req, lb, func() {
		lb.AddressType = addrType
		for _, z := range lb.Zones {
			if addrType == "Internet" {
				s.setPublic(z, eips[z.ZoneID])
			} else {
				z.PublicIPv4, z.AllocationID = "", ""
			}
		}
	})
}

func (s *Service) updateLoadBalancerProtection(req *api.Request) (map[string]any, error) {
	lb, err := s.lbParam(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	var delOn *bool
	if p.String("DeletionProtectionEnabled") != "" {
		v, err := p.Bool("DeletionProtectionEnabled", false)
		if err != nil {
			return nil, err
		}
		delOn = &v
	}
	mod, err := canonical(p, "ModificationProtectionStatus", "", "NonProtection", "ConsoleProtection")
	if err != nil {
		return nil, err
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	if delOn != nil {
		if *delOn {
			if !lb.DeletionProtection.Enabled {
				lb.DeletionProtection.EnabledTime = req.Now
			}
			lb.DeletionProtection.Enabled = true
			lb.DeletionProtection.Reason = p.String("DeletionProtectionReason")
		} else {
			lb.DeletionProtection = Protection{}
		}
	}
	if mod != "" {
		on := mod == "ConsoleProtection"
		if on && !lb.ModificationProtection.Enabled {
			lb.ModificationProtection.EnabledTime = req.Now
		}
		lb.ModificationProtection.Status, lb.ModificationProtection.Enabled = mod, on
		lb.ModificationProtection.Reason = ""
		if on {
			lb.ModificationProtection.Reason = p.String("ModificationProtectionReason")
		}
	}
	return map[string]any{}, nil
}

func (s *Service) setIpv6Internet(req *api.Request, typ string) (map[string]any, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, err
	}
	if lb.AddressIPVersion != "DualStack" {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectStatus.loadbalancer", "The load balancer %s is not a DualStack load balancer.", lb.ID)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	lb.IPv6AddressType = typ
	return map[string]any{}, nil
}

func (s *Service) enableIpv6Internet(req *api.Request) (map[string]any, error) {
	return s.setIpv6Internet(req, "Internet")
}

func (s *Service) disableIpv6Internet(req *api.Request) (map[string]any, error) {
	return s.setIpv6Internet(req, "Intranet")
}

// requestedSecurityGroups returns the de-duplicated SecurityGroupIds a
// CreateLoadBalancer or UpdateLoadBalancerAttribute request sets, once they
// are within the quota and all are security groups of vpcID.
func (s *Service) requestedSecurityGroups(p api.Params, vpcID string) ([]string, error) {
	sgs := dedupe(p.List("SecurityGroupIds"))
	if len(sgs) > maxSecurityGroups {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaInsufficient", "A load balancer can join at most %d security groups.", maxSecurityGroups)
	}
	if err := s.checkSecurityGroups(sgs, vpcID); err != nil {
		return nil, err
	}
	return sgs, nil
}

// securityGroupChange returns the load balancer a Join/LeaveSecurityGroup
// request may change and its non-empty, de-duplicated SecurityGroupIds.
func (s *Service) securityGroupChange(req *api.Request) (*LoadBalancer, []string, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, nil, err
	}
	ids := dedupe(req.Params.List("SecurityGroupIds"))
	if len(ids) == 0 {
		return nil, nil, api.MissingParameter("SecurityGroupIds")
	}
	return lb, ids, nil
}

func (s *Service) joinSecurityGroup(req *api.Request) (map[string]any, error) {
	lb, ids, err := s.securityGroupChange(req)
	if err != nil {
		return nil, err
	}
	if err := s.checkSecurityGroups(ids, lb.VpcID); err != nil {
		return nil, err
	}
	next := append([]string(nil), lb.SecurityGroupIDs...)
	for _, id := range ids {
		if !slices.Contains(next, id) {
			next = append(next, id)
		}
	}
	if len(next) > maxSecurityGroups {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaInsufficient", "A load balancer can join at most %d security groups; %s would have %d.", maxSecurityGroups, lb.ID, len(next))
	}
	return s.reconfigureLB(req, lb, func() { lb.SecurityGroupIDs = next })
}

func (s *Service) leaveSecurityGroup(req *api.Request) (map[string]any, error) {
	lb, ids, err := s.securityGroupChange(req)
	if err != nil {
		return nil, err
	}
	return s.reconfigureLB(req, lb, func() {
		lb.SecurityGroupIDs = without(lb.SecurityGroupIDs, ids)
	})
}

// without is ids less the ones in drop, in order (nil when none is left).
func without(ids, drop []string) []string {
	var keep []string
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			keep = append(keep, id)
		}
	}
	return keep
}

// bandwidthPackageChange returns the load balancer an Attach/Detach
// bandwidth package request may change and its required BandwidthPackageId.
func (s *Service) bandwidthPackageChange(req *api.Request) (*LoadBalancer, string, error) {
	lb, err := s.lbForUpdate(req)
	if err != nil {
		return nil, "", err
	}
	id, err := req.Params.Required("BandwidthPackageId")
	if err != nil {
		return nil, "", err
	}
	return lb, id, nil
}

func (s *Service) attachBandwidthPackage(req *api.Request) (map[string]any, error) {
	lb, id, err := s.bandwidthPackageChange(req)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(id, "cbwp-") {
		return nil, api.NotFound("ResourceNotFound.BandwidthPackage", "The specified resource %s is not found.", id)
	}
	if lb.AddressType != "Internet" {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectStatus.loadbalancer", "Only an Internet load balancer can use a bandwidth package; %s is %s.", lb.ID, lb.AddressType)
	}
	if lb.BandwidthPackageID != "" {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectStatus.loadbalancer", "The load balancer %s is already associated with bandwidth package %s.", lb.ID, lb.BandwidthPackageID)
	}
	return s.reconfigureLB(req, lb, func() { lb.BandwidthPackageID = id })
}

func (s *Service) detachBandwidthPackage(req *api.Request) (map[string]any, error) {
	lb, id, err := s.bandwidthPackageChange(req)
	if err != nil {
		return nil, err
	}
	if lb.BandwidthPackageID != id {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectStatus.loadbalancer", "The load balancer %s is not associated with bandwidth package %s.", lb.ID, id)
	}
	return s.reconfigureLB(req, lb, func() { lb.BandwidthPackageID = "" })
}

// dedupe drops empty and repeated ids, keeping the first occurrence.
func dedupe(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
