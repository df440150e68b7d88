package ecs

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

func errInstanceNotFound(id string) error {
	return api.NotFound("InvalidInstanceId.NotFound", "The specified InstanceId %s does not exist.", id)
}

func errIncorrectStatus(id, status string) error {
	return api.Errorf(http.StatusForbidden, "IncorrectInstanceStatus", "The current status of the resource does not support this operation: instance %s is %s.", id, status)
}

// status is computed from the transition deadline, so reads never mutate.
func (i *Instance) status(now time.Time) string {
	if i.Transition != "" && now.Before(i.TransitionUntil) {
		return i.Transition
	}
	return i.Status
}

func (s *Service) transition(i *Instance, to, via string, now time.Time) {
	i.Status, i.Transition = to, via
	i.TransitionUntil = now.Add(s.st.Settings().Delay(store.DelayECSInstance))
}

func (s *Service) primaryIP(i *Instance) string {
	if e, ok := s.state.ENIs[i.PrimaryENIID]; ok && len(e.PrivateIPs) > 0 {
		return e.PrivateIPs[0]
	}
	return ""
}

func (s *Service) instanceENIs(i *Instance) []*ENI {
	var out []*ENI
	for _, e := range s.state.ENIs {
		if e.InstanceID == i.ID {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if (out[a].ID == i.PrimaryENIID) != (out[b].ID == i.PrimaryENIID) {
			return out[a].ID == i.PrimaryENIID
		}
		return out[a].Seq < out[b].Seq
	})
	return out
}

func (s *Service) sortedInstances() []*Instance {
	return store.ByCreation(s.state.Instances, func(i *Instance) int64 { return i.Seq })
}

func (s *Service) regionInstance(req *api.Request, id string) (*Instance, error) {
	return api.InRegion(req, s.state.Instances, id, func(i *Instance) string { return i.RegionID }, errInstanceNotFound)
}

var instanceTypeRe = regexp.MustCompile(`^ecs\.[a-z0-9-]+\.([0-9]*)(small|medium|large|xlarge)$`)

// shape derives vCPUs and memory (MiB) from an instance type name such as
// ecs.g6.2xlarge, by the family's memory ratio (c 1:2, g 1:4, r 1:8).
func shape(instanceType string) (cpu, memMiB int) {
	m := instanceTypeRe.FindStringSubmatch(instanceType)
	if m == nil {
		return 2, 4096
	}
	switch m[2] {
	case "small":
		cpu = 1
	case "medium":
		cpu = 1
	case "large":
		cpu = 2
	case "xlarge":
		n := 1
		if m[1] != "" {
			n, _ = strconv.Atoi(m[1])
		}
		cpu = 4 * n
	}
	ratio := 4
	family := strings.Split(instanceType, ".")[1]
	switch family[0] {
	case 'c':
		ratio = 2
	case 'r':
		ratio = 8
	}
	return cpu, cpu * ratio * 1024
}

// randomMAC returns an address in Alibaba Cloud's 00:16:3e OUI.
func randomMAC() string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return fmt.Sprintf("00:16:3e:%02x:%02x:%02x", b[0], b[1], b[2])
}

// newPublicIP picks an unused address from a public pool for instances
// created with InternetMaxBandwidthOut > 0.
func (s *Service) newPublicIP() string {
	for {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<16))
		if err != nil {
			panic(err)
		}
		ip := fmt.Sprintf("47.96.%d.%d", n.Int64()>>8, n.Int64()&0xff)
		taken := false
		for _, i := range s.state.Instances {
			if i.PublicIP == ip {
				taken = true
			}
		}
		if !taken {
			return ip
		}
	}
}

func (s *Service) instanceView(i *Instance, now time.Time) map[string]any {
	ip := s.primaryIP(i)
	cpu, mem := shape(i.InstanceType)
	var sgs []string
	nics := []map[string]any{}
	for _, e := range s.instanceENIs(i) {
		if e.ID == i.PrimaryENIID {
			sgs = e.SecurityGroupIDs
		}
		sets := []map[string]any{}
		for k, a := range e.PrivateIPs {
			sets = append(sets, map[string]any{"PrivateIpAddress": a, "Primary": k == 0})
		}
		primary := ""
		if len(e.PrivateIPs) > 0 {
			primary = e.PrivateIPs[0]
		}
		nics = append(nics, map[string]any{
			"NetworkInterfaceId": e.ID, "Type": e.Type, "PrimaryIpAddress": primary, "MacAddress": e.MAC,
			"PrivateIpSets": map[string]any{"PrivateIpSet": sets}, "Ipv6Sets": ipv6Sets(e),
		})
	}
	if sgs == nil {
		sgs = []string{}
	}
	public := []string{}
	if i.PublicIP != "" {
		public = append(public, i.PublicIP)
	}
	eip := map[string]any{"IpAddress": "", "AllocationId": "", "Bandwidth": 0, "InternetChargeType": "", "IsSupportUnassociate": true}
	if eips := s.vpc.EIPsBoundTo(i.ID); len(eips) > 0 {
		bw, _ := strconv.Atoi(eips[0].Bandwidth)
		eip = map[string]any{"IpAddress": eips[0].IPAddress, "AllocationId": eips[0].AllocationID, "Bandwidth": bw, "InternetChargeType": eips[0].InternetChargeType, "IsSupportUnassociate": true}
	}
	st := i.status(now)
	start := ""
	if !i.StartedAt.IsZero() {
		start = ecsTime(i.StartedAt)
	}
	return map[string]any{
		"InstanceId": i.ID, "InstanceName": i.Name, "HostName": i.HostName, "Description": i.Description,
		"ImageId": i.ImageID, "InstanceType": i.InstanceType, "InstanceTypeFamily": familyOf(i.InstanceType),
		"RegionId": i.RegionID, "ZoneId": i.ZoneID, "Status": st, "InstanceNetworkType": "vpc",
		"InstanceChargeType": i.ChargeType, "SpotStrategy": i.SpotStrategy, "InternetChargeType": i.InternetChargeType,
		"InternetMaxBandwidthOut": i.InternetMaxBandwidthOut, "CreationTime": ecsTime(i.CreatedAt), "StartTime": start,
		"ExpiredTime": "2099-12-31T15:59Z", "Cpu": cpu, "Memory": mem, "OSType": "linux", "OSName": "Alibaba Cloud Linux 3",
		"IoOptimized": true, "DeletionProtection": false, "StoppedMode": stoppedMode(i, st), "SerialNumber": i.ID[2:],
		"VpcAttributes": map[string]any{
			"VpcId": i.VpcID, "VSwitchId": i.VSwitchID, "NatIpAddress": "",
			"PrivateIpAddress": map[string]any{"IpAddress": []string{ip}},
		},
		"PublicIpAddress":   map[string]any{"IpAddress": public},
		"InnerIpAddress":    map[string]any{"IpAddress": []string{}},
		"EipAddress":        eip,
		"SecurityGroupIds":  map[string]any{"SecurityGroupId": sgs},
		"NetworkInterfaces": map[string]any{"NetworkInterface": nics},
		"Tags":              map[string]any{"Tag": api.TagMaps(i.Tags, "TagKey", "TagValue")},
		"OperationLocks":    map[string]any{"LockReason": []any{}},
	}
}

func stoppedMode(i *Instance, status string) string {
	if status != StatusStopped {
		return "Not-applicable"
	}
	if i.StoppedMode == "" {
		return "KeepCharging"
	}
	return i.StoppedMode
}

func familyOf(t string) string {
	parts := strings.Split(t, ".")
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

func (s *Service) describeInstances(req *api.Request) (map[string]any, error) {
	p := req.Params
	var ids, ips, pubs, eips []string
	for _, f := range []struct {
		key string
		to  *[]string
	}{{"InstanceIds", &ids}, {"PrivateIpAddresses", &ips}, {"PublicIpAddresses", &pubs}, {"EipAddresses", &eips}} {
		v, err := jsonIDs(p, f.key, 100)
		if err != nil {
			return nil, err
		}
		*f.to = v
	}
	status, err := p.Enum("Status", "", StatusPending, StatusRunning, StatusStarting, StatusStopping, StatusStopped)
	if err != nil {
		return nil, err
	}
	netType, err := p.Enum("InstanceNetworkType", "", "vpc", "classic")
	if err != nil {
		return nil, err
	}
	vpcID, vswID, zone, name := p.String("VpcId"), p.String("VSwitchId"), p.String("ZoneId"), p.String("InstanceName")
	itype, sg, charge := p.String("InstanceType"), p.String("SecurityGroupId"), p.String("InstanceChargeType")
	tags := p.Tags()
	var list []*Instance
	for _, i := range s.sortedInstances() {
		if i.RegionID != req.RegionID || (len(ids) > 0 && !slices.Contains(ids, i.ID)) || (len(ips) > 0 && !slices.Contains(ips, s.primaryIP(i))) ||
			(len(pubs) > 0 && !slices.Contains(pubs, i.PublicIP)) || (status != "" && i.status(req.Now) != status) ||
			netType == "classic" || (vpcID != "" && i.VpcID != vpcID) || (vswID != "" && i.VSwitchID != vswID) ||
			(zone != "" && i.ZoneID != zone) || (name != "" && !nameMatch(name, i.Name)) || (itype != "" && i.InstanceType != itype) ||
			(charge != "" && i.ChargeType != charge) || !api.MatchTags(i.Tags, tags) {
			continue
		}
		if sg != "" {
			if e, ok := s.state.ENIs[i.PrimaryENIID]; !ok || !slices.Contains(e.SecurityGroupIDs, sg) {
				continue
			}
		}
		if len(eips) > 0 {
			bound := s.vpc.EIPsBoundTo(i.ID)
			if len(bound) == 0 || !slices.Contains(eips, bound[0].IPAddress) {
				continue
			}
		}
		list = append(list, i)
	}
	view := func(i *Instance) map[string]any { return s.instanceView(i, req.Now) }
	return pagedList(p, list, func(i *Instance) int64 { return i.Seq }, 100, 100, "Instances", "Instance", view)
}

// nameMatch supports the trailing * wildcard InstanceName accepts.
func nameMatch(pattern, name string) bool {
	if strings.HasSuffix(pattern, "*") {
		return strings.HasPrefix(name, strings.TrimSuffix(pattern, "*"))
	}
	return pattern == name
}

// placement is where a new instance goes, resolved before anything is created.
type placement struct {
	vsw vpc.VSwitchInfo
	sgs []string
}

func (s *Service) resolvePlacement(req *api.Request, vswID string, sgIDs []string) (placement, error) {
	vsw, ok := s.vpc.VSwitch(vswID)
	if !ok || vsw.RegionID != req.RegionID {
		return placement{}, api.NotFound("InvalidVSwitchId.NotFound", "The specified VSwitchId %s does not exist.", vswID)
	}
	if z := req.Params.String("ZoneId"); z != "" && z != vsw.ZoneID {
		return placement{}, api.Errorf(http.StatusBadRequest, "InvalidVSwitchId.ZoneMismatch", "The vSwitch %s is in zone %s, not %s.", vswID, vsw.ZoneID, z)
	}
	if len(sgIDs) == 0 {
		return placement{}, api.MissingParameter("SecurityGroupId")
	}
	if len(sgIDs) > 5 {
		return placement{}, api.InvalidParameter("SecurityGroupIds", "An instance can join at most 5 security groups.")
	}
	for _, id := range sgIDs {
		g, ok := s.state.SecurityGroups[id]
		if !ok || g.RegionID != req.RegionID {
			return placement{}, errSGNotFound(id)
		}
		if g.VpcID != vsw.VpcID {
			return placement{}, errSGVpcMismatch(id, vsw.VpcID)
		}
	}
	return placement{vsw: vsw, sgs: sgIDs}, nil
}

// createInstance builds an instance with its primary ENI; ip must already
// be allocated in the vSwitch.
func (s *Service) createInstance(region string, pl placement, ip string, i *Instance, eniID string, now time.Time) *Instance {
	if i.ID == "" {
		i.ID = store.NewID("i")
	}
	if i.Name == "" {
		i.Name = i.ID
	}
	if i.HostName == "" {
		i.HostName = "iZ" + i.ID[2:] + "Z"
	}
	if i.ChargeType == "" {
		i.ChargeType = "PostPaid"
	}
	if i.SpotStrategy == "" {
		i.SpotStrategy = "NoSpot"
	}
	if i.InternetChargeType == "" {
		i.InternetChargeType = "PayByTraffic"
	}
	if eniID == "" {
		eniID = store.NewID("eni")
	}
	i.RegionID, i.ZoneID, i.VpcID, i.VSwitchID = region, pl.vsw.ZoneID, pl.vsw.VpcID, pl.vsw.ID
	i.PrimaryENIID, i.CreatedAt, i.StartedAt, i.Seq = eniID, now, now, s.state.Next()
	s.state.Instances[i.ID] = i
	s.state.ENIs[eniID] = &ENI{
		ID: eniID, InstanceID: i.ID, VpcID: pl.vsw.VpcID, VSwitchID: pl.vsw.ID, ZoneID: pl.vsw.ZoneID, RegionID: region,
		MAC: randomMAC(), Type: "Primary", PrivateIPs: []string{ip}, SecurityGroupIDs: append([]string(nil), pl.sgs...),
		DeleteOnRelease: true, CreatedAt: now, Seq: s.state.Next(),
	}
	return i
}

func (s *Service) runInstances(req *api.Request) (map[string]any, error) {
	alive := func(id string) bool { _, ok := s.state.Instances[id]; return ok }
	if ids, ok, err := s.state.Tokens.Replay(req, alive); err != nil {
		return nil, err
	} else if ok {
		return map[string]any{"InstanceIdSets": map[string]any{"InstanceIdSet": ids}, "OrderId": "", "TradePrice": 0}, nil
	}
	p := req.Params
	required, err := p.RequiredAll("ImageId", "InstanceType")
	if err != nil {
		return nil, err
	}
	image, itype := required[0], required[1]
	if !instanceTypeRe.MatchString(itype) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidInstanceType.ValueNotSupported", "The specified InstanceType %q does not exist or is beyond the permitted range.", itype)
	}
	vswID, err := p.Required("VSwitchId")
	if err != nil {
		return nil, err
	}
	amount, err := p.IntRange("Amount", 1, 1, 100)
	if err != nil {
		return nil, err
	}
	charge, err := p.Enum("InstanceChargeType", "PostPaid", "PostPaid", "PrePaid")
	if err != nil {
		return nil, err
	}
	spot, err := p.Enum("SpotStrategy", "NoSpot", "NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit")
	if err != nil {
		return nil, err
	}
	inetCharge, err := p.Enum("InternetChargeType", "PayByTraffic", "PayByTraffic", "PayByBandwidth")
	if err != nil {
		return nil, err
	}
	bwOut, err := p.IntRange("InternetMaxBandwidthOut", 0, 0, 100)
	if err != nil {
		return nil, err
	}
	tags := p.Tags()
	if len(tags) > s.st.Settings().Quota(store.QuotaTagsPerResource) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidTagCount", "The specified tags are beyond the permitted range.")
	}
	if err := checkTagKeys(tags); err != nil {
		return nil, err
	}
	want := p.String("PrivateIpAddress")
	if want != "" && amount > 1 {
		return nil, api.InvalidParameter("PrivateIpAddress", "PrivateIpAddress can only be set when Amount is 1.")
	}
	sgIDs := p.List("SecurityGroupIds")
	if sg := p.String("SecurityGroupId"); sg != "" {
		if len(sgIDs) > 0 {
			return nil, api.InvalidParameter("SecurityGroupIds", "SecurityGroupId and SecurityGroupIds.N cannot be set together.")
		}
		sgIDs = []string{sg}
	}
	pl, err := s.resolvePlacement(req, vswID, sgIDs)
	if err != nil {
		return nil, err
	}
	ips := make([]string, 0, amount)
	for n := 0; n < amount; n++ {
		ip, err := s.vpc.AllocatePrivateIP(vswID, want)
		if err != nil {
			for _, a := range ips {
				s.vpc.ReleasePrivateIP(vswID, a)
			}
			return nil, ecsIPError(err)
		}
		ips = append(ips, ip)
	}
	if dry, err := p.Bool("DryRun", false); err != nil || dry {
		for _, a := range ips {
			s.vpc.ReleasePrivateIP(vswID, a)
		}
		if err != nil {
			return nil, err
		}
		return nil, api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	ids := make([]string, 0, amount)
	for _, ip := range ips {
		i := &Instance{
			Name: p.String("InstanceName"), HostName: p.String("HostName"), Description: p.String("Description"),
			InstanceType: itype, ImageID: image, ChargeType: charge, SpotStrategy: spot, InternetChargeType: inetCharge,
			InternetMaxBandwidthOut: bwOut, Tags: append([]api.Tag(nil), tags...),
		}
		if bwOut > 0 {
			i.PublicIP = s.newPublicIP()
		}
		s.createInstance(req.RegionID, pl, ip, i, "", req.Now)
		s.transition(i, StatusRunning, StatusPending, req.Now)
		ids = append(ids, i.ID)
	}
	s.state.Tokens.Remember(req, ids...)
	return map[string]any{"InstanceIdSets": map[string]any{"InstanceIdSet": ids}, "OrderId": "", "TradePrice": 0}, nil
}

// ecsIPError translates VPC address-allocation errors to ECS codes.
func ecsIPError(err error) error {
	if e, ok := err.(*api.Error); ok && e.Code == vpc.ErrCodeVSwitchFull {
		return api.Errorf(http.StatusBadRequest, "InvalidVSwitchId.IpNotEnough", "The specified vSwitch does not have enough IP addresses.")
	}
	return err
}

// batch runs a start/stop style change over InstanceId.N with the
// BatchOptimization semantics: AllTogether (default) fails the whole call on
// the first bad instance, SuccessFirst reports per-instance codes.
func (s *Service) batch(req *api.Request, from, to, via string) (map[string]any, error) {
	p := req.Params
	ids, err := instanceIDs(p, "changed")
	if err != nil {
		return nil, err
	}
	mode, err := p.Enum("BatchOptimization", "AllTogether", "AllTogether", "SuccessFirst")
	if err != nil {
		return nil, err
	}
	stoppedMode, err := p.Enum("StoppedMode", "KeepCharging", "KeepCharging", "StopCharging")
	if err != nil {
		return nil, err
	}
	dry, err := p.Bool("DryRun", false)
	if err != nil {
		return nil, err
	}
	check := func(id string) (*Instance, error) {
		i, err := s.regionInstance(req, id)
		if err != nil {
			return nil, err
		}
		if st := i.status(req.Now); st != from {
			return nil, errIncorrectStatus(id, st)
		}
		return i, nil
	}
	if mode == "AllTogether" {
		for _, id := range ids {
			if _, err := check(id); err != nil {
				return nil, err
			}
		}
	}
	if dry {
		return nil, api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	results := []map[string]any{}
	for _, id := range ids {
		i, err := check(id)
		if err != nil {
			e := err.(*api.Error)
			prev := ""
			if inst, ok := s.state.Instances[id]; ok {
				prev = inst.status(req.Now)
			}
			results = append(results, map[string]any{"InstanceId": id, "Code": e.Code, "Message": e.Message, "PreviousStatus": prev, "CurrentStatus": prev})
			continue
		}
		s.transition(i, to, via, req.Now)
		if to == StatusStopped {
			i.StoppedMode = stoppedMode
		} else {
			i.StartedAt = req.Now
		}
		results = append(results, map[string]any{"InstanceId": id, "Code": "200", "Message": "success", "PreviousStatus": from, "CurrentStatus": via})
	}
	return map[string]any{"InstanceResponses": map[string]any{"InstanceResponse": results}}, nil
}

func (s *Service) startInstances(req *api.Request) (map[string]any, error) {
	return s.batch(req, StatusStopped, StatusRunning, StatusStarting)
}

func (s *Service) stopInstances(req *api.Request) (map[string]any, error) {
	return s.batch(req, StatusRunning, StatusStopped, StatusStopping)
}

// release removes an instance with its ENIs, frees their addresses and
// disassociates its EIPs, as releasing an instance does.
func (s *Service) release(i *Instance) {
	for _, e := range s.instanceENIs(i) {
		for _, ip := range append(append([]string(nil), e.PrivateIPs...), e.IPv6s...) {
			s.vpc.ReleasePrivateIP(e.VSwitchID, ip)
		}
		delete(s.state.ENIs, e.ID)
	}
	s.vpc.UnbindEIPs(i.ID)
	delete(s.state.Instances, i.ID)
}

func (s *Service) deletable(req *api.Request, id string, force bool) (*Instance, error) {
	i, err := s.regionInstance(req, id)
	if err != nil {
		return nil, err
	}
	if st := i.status(req.Now); !force && st != StatusStopped {
		return nil, errIncorrectStatus(id, st)
	}
	return i, nil
}

func (s *Service) deleteInstance(req *api.Request) (map[string]any, error) {
	p := req.Params
	id, err := p.Required("InstanceId")
	if err != nil {
		return nil, err
	}
	force, err := p.Bool("Force", false)
	if err != nil {
		return nil, err
	}
	i, err := s.deletable(req, id, force)
	if err != nil {
		return nil, err
	}
	if dry, _ := p.Bool("DryRun", false); dry {
		return nil, api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	s.release(i)
	return map[string]any{}, nil
}

// instanceIDs returns the InstanceId.N of a call over several instances
// (verb says what the call does to them): 1 to 100 of them.
func instanceIDs(p api.Params, verb string) ([]string, error) {
	ids := p.List("InstanceId")
	if len(ids) == 0 {
		return nil, api.MissingParameter("InstanceId.N")
	}
	if len(ids) > 100 {
		return nil, api.InvalidParameter("InstanceId", "At most 100 instances may be %s in one call.", verb)
	}
	return ids, nil
}

func (s *Service) deleteInstances(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids, err := instanceIDs(p, "deleted")
	if err != nil {
		return nil, err
	}
	force, err := p.Bool("Force", false)
	if err != nil {
		return nil, err
	}
	var list []*Instance
	for _, id := range ids {
		i, err := s.deletable(req, id, force)
		if err != nil {
			return nil, err
		}
		list = append(list, i)
	}
	if dry, _ := p.Bool("DryRun", false); dry {
		return nil, api.Errorf(http.StatusBadRequest, "DryRunOperation", "Request validation has been passed with DryRun flag set.")
	}
	for _, i := range list {
		s.release(i)
	}
	return map[string]any{"TaskGroupId": ""}, nil
}

// instanceAttributeFields are the members of DescribeInstances' item that
// DescribeInstanceAttribute's model also has, with the same shape.
var instanceAttributeFields = []string{
	"InstanceId", "InstanceName", "HostName", "Description", "ImageId", "InstanceType", "RegionId", "ZoneId",
	"Status", "InstanceNetworkType", "InstanceChargeType", "InternetChargeType", "InternetMaxBandwidthOut",
	"CreationTime", "ExpiredTime", "Cpu", "Memory", "StoppedMode", "SerialNumber", "VpcAttributes",
	"PublicIpAddress", "InnerIpAddress", "SecurityGroupIds",
}

// describeInstanceAttribute answers one instance of the request's region
// in the older single-instance shape: IoOptimized is the string
// "optimized", OperationLocks lists LockReason objects.
func (s *Service) describeInstanceAttribute(req *api.Request) (map[string]any, error) {
	i, err := api.Lookup(req, "InstanceId", s.regionInstance)
	if err != nil {
		return nil, err
	}
	full := s.instanceView(i, req.Now)
	out := make(map[string]any, len(instanceAttributeFields)+4)
	for _, k := range instanceAttributeFields {
		out[k] = full[k]
	}
	eip := full["EipAddress"].(map[string]any)
	out["EipAddress"] = map[string]any{"IpAddress": eip["IpAddress"], "AllocationId": eip["AllocationId"],
		"InternetChargeType": eip["InternetChargeType"], "Bandwidth": eip["Bandwidth"]}
	out["IoOptimized"] = "optimized"
	out["InternetMaxBandwidthIn"] = 200
	out["OperationLocks"] = map[string]any{"LockReason": []any{}}
	return out, nil
}
