// Package nodes implements the cloud-provider InstancesV2 interface over
// one cached, paged listing of the cluster VPC's ECS instances, so that
// initializing or checking N Nodes costs about ceil(N/100) DescribeInstances
// calls instead of N.
package nodes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"

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
// than MinRefreshInterval before the lookup, and no earlier than the time a
// Since or Fresh context names. Otherwise the lookup waits for such a
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

	// flights runs each listing once, in a goroutine of its own, for all
	// the lookups waiting for it; each waits on its own context.
	flights singleflight.Group

	mu   sync.Mutex
	byID map[string]*Instance
	byIP map[string]*Instance
	// listedAt is when the listing the maps hold began (zero: none yet).
	listedAt time.Time
	// failure is the error of the last failed listing, which began at
	// failedAt.
	failure  error
	failedAt time.Time
	// next is the listing running or about to begin; nil when none is.
	next *listing
	// lastStart is when the latest listing began.
	lastStart time.Time
	seq       uint64
}

// listing is one listing of the VPC, shared by every lookup waiting for it.
type listing struct {
	// key names it in Index.flights.
	key string
	// start is when it began; zero until then.
	start time.Time
}

// NewIndex returns an empty index over the instances of vpcID.
func NewIndex(l Lister, vpcID string) *Index {
	return &Index{
		lister: l, vpcID: vpcID, MaxAge: 15 * time.Second, MinRefreshInterval: 2 * time.Second,
		ListingGap: 500 * time.Millisecond, ListingTimeout: 2 * time.Minute, now: time.Now,
	}
}

// ByID returns the instance with id; nil when it does not exist.
func (x *Index) ByID(ctx context.Context, id string) (*Instance, error) {
	return x.lookup(ctx, func() *Instance { return x.byID[id] })
}

// ByPrivateIP returns the instance holding ip; nil when none does.
func (x *Index) ByPrivateIP(ctx context.Context, ip string) (*Instance, error) {
	ip = canonicalIP(ip)
	return x.lookup(ctx, func() *Instance { return x.byIP[ip] })
}

// freshKey marks a context whose lookups may answer "no such instance"
// only from a listing begun no earlier than the time it holds.
type freshKey struct{}

// Fresh returns a context under which ByID and ByPrivateIP answer a miss
// only from a listing begun now or later: for decisions a stale miss must
// not make.
func (x *Index) Fresh(ctx context.Context) context.Context {
	return x.Since(ctx, x.now())
}

// Since returns a context under which ByID and ByPrivateIP answer a miss
// only from a listing begun at or after t, waiting for one when needed; a
// hit is answered from any listing younger than MaxAge.
func (x *Index) Since(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshKey{}, t)
}

func (x *Index) lookup(ctx context.Context, find func() *Instance) (*Instance, error) {
	now := x.now()
	hitSince, missSince := now.Add(-x.MaxAge), now.Add(-x.MinRefreshInterval)
	since, fresh := ctx.Value(freshKey{}).(time.Time)
	if fresh && since.After(missSince) {
		missSince = since
	}
	for waited := false; ; waited = true {
		x.mu.Lock()
		listedAt := x.listedAt
		if !listedAt.IsZero() && !listedAt.Before(hitSince) {
			if in := find(); in != nil {
				cp := *in
				x.mu.Unlock()
				return &cp, nil
			}
			if !listedAt.Before(missSince) {
				x.mu.Unlock()
				return nil, nil
			}
		}
		x.mu.Unlock()
		if fresh && !waited && !listedAt.IsZero() {
			// The case that used to start the node controller's backoff:
			// the cached listing began before the caller's instance could
			// be in it.
			klog.FromContext(ctx).V(4).Info("Instance not in a listing begun before it may have existed; waiting for a newer listing",
				"vpc", x.vpcID, "listedAt", listedAt, "since", since)
		}
		if err := x.listed(ctx, missSince); err != nil {
			return nil, err
		}
	}
}

// Warm runs a listing now, or joins the one in flight, so that the first
// lookups are answered from it; it returns that listing's error.
func (x *Index) Warm(ctx context.Context) error {
	return x.listed(ctx, x.now())
}

// listed returns once a listing begun at or after since has ended, with
// its error; it joins the listing in flight, or starts one. A listing in
// flight that began earlier is waited for first, as one runs at a time.
func (x *Index) listed(ctx context.Context, since time.Time) error {
	for {
		x.mu.Lock()
		if !x.listedAt.IsZero() && !x.listedAt.Before(since) {
			x.mu.Unlock()
			return nil
		}
		if x.failure != nil && !x.failedAt.Before(since) {
			err := x.failure
			x.mu.Unlock()
			return err
		}
		done := x.join(ctx)
		x.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("waiting for a listing of VPC %s: %w", x.vpcID, ctx.Err())
		}
	}
}

// join, called with x.mu held, returns the end of the listing in flight,
// starting one when none is. The listing runs on a context detached from
// the caller's, so one caller giving up does not fail the others.
func (x *Index) join(ctx context.Context) <-chan singleflight.Result {
	l := x.next
	if l == nil {
		x.seq++
		l = &listing{key: strconv.FormatUint(x.seq, 10)}
		x.next = l
		detached := context.WithoutCancel(ctx)
		return x.flights.DoChan(l.key, func() (any, error) { return nil, x.run(detached, l) })
	}
	// x.next is cleared under x.mu before its function returns, so the key
	// is still in flight and this joins it rather than start another.
	return x.flights.DoChan(l.key, func() (any, error) {
		return nil, fmt.Errorf("listing %s of VPC %s ended before it was joined", l.key, x.vpcID)
	})
}

// run waits out ListingGap since the previous listing began, then lists
// the VPC and replaces the maps.
func (x *Index) run(ctx context.Context, l *listing) error {
	x.mu.Lock()
	gap := x.lastStart.Add(x.ListingGap).Sub(x.now())
	x.mu.Unlock()
	if gap > 0 {
		time.Sleep(gap)
	}
	ctx, cancel := context.WithTimeout(ctx, x.ListingTimeout)
	defer cancel()
	x.mu.Lock()
	start := x.now()
	l.start, x.lastStart = start, start
	x.mu.Unlock()
	list, err := x.lister.ListVPCInstances(ctx, x.vpcID)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.next = nil
	if err != nil {
		x.failure, x.failedAt = err, start
		klog.ErrorS(err, "Listing VPC instances failed", "vpc", x.vpcID)
		return err
	}
	x.failure = nil
	x.byID = make(map[string]*Instance, len(list))
	x.byIP = make(map[string]*Instance, len(list))
	for i := range list {
		in := &list[i]
		x.byID[in.ID] = in
		for _, ip := range in.PrivateIPs {
			x.byIP[strings.TrimSpace(ip)] = in
		}
		// A dual-stack kubelet may give its IPv6 address first.
		for _, ip := range in.IPv6s {
			x.byIP[ip] = in
		}
	}
	x.listedAt = start
	klog.V(4).InfoS("Listed VPC instances", "vpc", x.vpcID, "count", len(list), "took", x.now().Sub(start), "waitedForGap", max(gap, 0))
	return nil
}
