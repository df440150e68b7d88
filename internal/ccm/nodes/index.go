// Package nodes implements the cloud-provider InstancesV2 interface over
// one cached, paged listing of the cluster VPC's ECS instances, so that
// initializing or checking N Nodes costs about ceil(N/100) DescribeInstances
// calls instead of N.
package nodes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Instance is what the CCM needs of an ECS instance.
type Instance struct {
	// ID is the instance id (i-...).
	ID string
	// Region is the instance's region id, e.g. cn-hangzhou.
	Region string
	// Zone is the instance's zone id, e.g. cn-hangzhou-h (the Node's topology
	// zone label).
	Zone string
	// Type is the instance type, e.g. ecs.g7.large (the Node's instance-type
	// label).
	Type string
	// Status is the ECS status: Pending, Starting, Running, Stopping or
	// Stopped.
	Status string
	// ChargeType is the billing method: PrePaid or PostPaid.
	ChargeType string
	// SpotStrategy is NoSpot, SpotWithPriceLimit or SpotAsPriceGo.
	SpotStrategy string
	// PrivateIPs are the VPC private addresses, the primary first.
	PrivateIPs []string
	// PublicIPs are the public and EIP addresses, if any.
	PublicIPs []string
	// IPv6s are the primary ENI's IPv6 addresses, if any.
	IPv6s []string
	// Tags are the instance's tags, key to value.
	Tags map[string]string
	// PrimaryENI is the primary network interface (eni-...).
	PrimaryENI string
	// VSwitchID is the vSwitch the instance is attached to (vsw-...).
	VSwitchID string
	// VpcID is the instance's VPC (vpc-...); a lookup by id may find one
	// outside the cluster VPC.
	VpcID string
}

// Lister pages through the instances of a VPC.
type Lister interface {
	ListVPCInstances(ctx context.Context, vpcID string) ([]Instance, error)
}

// CloudLister lists instances through the cloud client layer.
type CloudLister struct {
	// Client makes the DescribeInstances calls.
	Client *cloud.Client
}

// pageSize is the largest page DescribeInstances serves.
const pageSize = 100

// ListVPCInstances implements Lister with DescribeInstances, 100 a page.
func (l CloudLister) ListVPCInstances(ctx context.Context, vpcID string) ([]Instance, error) {
	var out []Instance
	token := ""
	for page := 0; page < 1000; page++ {
		resp, err := cloud.Do(ctx, l.Client, cloud.ECS, "DescribeInstances", func(c *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
			req := ecs.CreateDescribeInstancesRequest()
			req.VpcId = vpcID
			req.MaxResults = requests.NewInteger(pageSize)
			req.NextToken = token
			return c.ECS.DescribeInstances(req)
		})
		if err != nil {
			return nil, fmt.Errorf("list instances of VPC %s: %w", vpcID, err)
		}
		for _, in := range resp.Instances.Instance {
			out = append(out, convert(in))
		}
		token = resp.NextToken
		if token == "" || len(resp.Instances.Instance) == 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list instances of VPC %s: more than 1000 pages", vpcID)
}

func convert(in ecs.Instance) Instance {
	out := Instance{
		ID: in.InstanceId, Region: in.RegionId, Zone: in.ZoneId, Type: in.InstanceType, Status: in.Status,
		ChargeType: in.InstanceChargeType, SpotStrategy: in.SpotStrategy, VSwitchID: in.VpcAttributes.VSwitchId,
		VpcID: in.VpcAttributes.VpcId,
		Tags:  map[string]string{},
	}
	out.PrivateIPs = append(out.PrivateIPs, in.VpcAttributes.PrivateIpAddress.IpAddress...)
	for _, ip := range in.InnerIpAddress.IpAddress {
		if !contains(out.PrivateIPs, ip) {
			out.PrivateIPs = append(out.PrivateIPs, ip)
		}
	}
	out.PublicIPs = append(out.PublicIPs, in.PublicIpAddress.IpAddress...)
	if eip := in.EipAddress.IpAddress; eip != "" && !contains(out.PublicIPs, eip) {
		out.PublicIPs = append(out.PublicIPs, eip)
	}
	for _, t := range in.Tags.Tag {
		out.Tags[t.TagKey] = t.TagValue
	}
	for _, ni := range in.NetworkInterfaces.NetworkInterface {
		if ni.Type == "Primary" || out.PrimaryENI == "" {
			out.PrimaryENI = ni.NetworkInterfaceId
			out.IPv6s = primaryIPv6s(ni)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Index is a cache of a VPC's instances by id and private IP, filled by
// paged listings of the VPC that concurrent lookups share. A lookup that
// finds its instance is answered from a listing younger than MaxAge. A miss
// is answered only from a listing that began late enough to prove it: less
// than MinRefreshInterval before the lookup. Under a Since or Fresh
// context, a miss, and a hit by IP, are answered only from a listing begun
// no earlier than the time it names. Otherwise the lookup waits for such a
// listing, and every lookup waiting meanwhile is answered by that same one.
type Index struct {
	lister Lister
	vpcID  string
	// MaxAge is how long a listing answers the lookups it can answer.
	MaxAge time.Duration
	// MinRefreshInterval stops a stream of misses for unknown ids from
	// relisting more often than this.
	MinRefreshInterval time.Duration
	// ListingGap is the least time between the starts of two listings, so
	// that misses arriving one after another (Nodes joining in a burst)
	// share a listing rather than each start one as the last ends.
	ListingGap time.Duration
	// ListingTimeout bounds one listing, whoever waits for it.
	ListingTimeout time.Duration
	now            func() time.Time

	instances *sharedListing[instanceMaps]
}

// instanceMaps are one listing's instances by id and by private IP.
type instanceMaps struct {
	byID, byIP map[string]*Instance
}

// NewIndex returns an empty index over the instances of vpcID.
func NewIndex(l Lister, vpcID string) *Index {
	x := &Index{
		lister: l, vpcID: vpcID, MaxAge: 15 * time.Second, MinRefreshInterval: 2 * time.Second,
		ListingGap: 500 * time.Millisecond, ListingTimeout: 2 * time.Minute, now: time.Now,
	}
	x.instances = newSharedListing(x, "instances of VPC "+vpcID, x.list)
	return x
}

// list lists the VPC's instances into maps.
func (x *Index) list(ctx context.Context) (instanceMaps, error) {
	list, err := x.lister.ListVPCInstances(ctx, x.vpcID)
	if err != nil {
		return instanceMaps{}, err
	}
	m := instanceMaps{byID: make(map[string]*Instance, len(list)), byIP: make(map[string]*Instance, len(list))}
	for i := range list {
		in := &list[i]
		m.byID[in.ID] = in
		for _, ip := range in.PrivateIPs {
			m.byIP[strings.TrimSpace(ip)] = in
		}
		// A dual-stack kubelet may give its IPv6 address first.
		for _, ip := range in.IPv6s {
			m.byIP[ip] = in
		}
	}
	return m, nil
}

// ByID returns the instance with id; nil when it does not exist.
func (x *Index) ByID(ctx context.Context, id string) (*Instance, error) {
	return x.lookup(ctx, false, func(m instanceMaps) *Instance { return m.byID[id] })
}

// ByPrivateIP returns the instance holding ip; nil when none does.
func (x *Index) ByPrivateIP(ctx context.Context, ip string) (*Instance, error) {
	ip = canonicalIP(ip)
	return x.lookup(ctx, true, func(m instanceMaps) *Instance { return m.byIP[ip] })
}

// freshKey marks a context whose lookups are answered only from a listing
// begun no earlier than the time it holds.
type freshKey struct{}

// Fresh is Since(ctx, now): for decisions a stale miss must not make.
func (x *Index) Fresh(ctx context.Context) context.Context {
	return x.Since(ctx, x.now())
}

// Since returns a context under which ByID and ByPrivateIP answer a miss,
// and ByPrivateIP a hit, only from a listing begun at or after t, waiting
// for one when needed: a miss in an older listing proves nothing about an
// instance created since, and a hit by IP in one may be an instance gone
// since whose address the caller's instance took (ids are never reused).
func (x *Index) Since(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshKey{}, t)
}

// bounds returns the oldest listings that may answer a lookup made now
// under ctx: with a hit, and with a miss. reused says the key looked up
// (an address) may have named something else in an older listing.
func (x *Index) bounds(ctx context.Context, reused bool) (hitSince, missSince time.Time) {
	now := x.now()
	hitSince, missSince = now.Add(-x.MaxAge), now.Add(-x.MinRefreshInterval)
	if since, ok := ctx.Value(freshKey{}).(time.Time); ok {
		missSince = latest(missSince, since)
		if reused {
			hitSince = latest(hitSince, since)
		}
	}
	return hitSince, missSince
}

// horizon is the age past which a listing answers no lookup: bounds only
// ever moves hitSince and missSince later than MaxAge and
// MinRefreshInterval before now.
func (x *Index) horizon() time.Duration {
	return max(x.MaxAge, x.MinRefreshInterval)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (x *Index) lookup(ctx context.Context, reused bool, find func(instanceMaps) *Instance) (*Instance, error) {
	hitSince, missSince := x.bounds(ctx, reused)
	in, found, err := lookupIn(ctx, x.instances, hitSince, missSince, func(m instanceMaps) (*Instance, bool) {
		in := find(m)
		return in, in != nil
	})
	if err != nil || !found {
		return nil, err
	}
	cp := *in
	return &cp, nil
}

// Warm returns once a listing begun now or later has ended, starting one
// when none runs, so that the first lookups are answered from it; it
// returns that listing's error.
func (x *Index) Warm(ctx context.Context) error {
	return x.instances.await(ctx, x.now())
}
