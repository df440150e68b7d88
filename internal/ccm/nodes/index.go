// Package nodes implements the cloud-provider InstancesV2 interface over
// one cached, paged listing of the cluster VPC's ECS instances, so that
// initializing or checking N Nodes costs about ceil(N/100) DescribeInstances
// calls instead of N.
package nodes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
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

// Index is a cache of a VPC's instances by id and private IP. A lookup
// that misses, or finds the cache older than MaxAge, refreshes it with one
// paged listing shared by every concurrent caller.
type Index struct {
	lister Lister
	vpcID  string
	// MaxAge is how long a listing answers lookups.
	MaxAge time.Duration
	// MinRefreshInterval stops a stream of misses for unknown ids from
	// relisting more often than this.
	MinRefreshInterval time.Duration
	now                func() time.Time

	mu        sync.Mutex
	byID      map[string]*Instance
	byIP      map[string]*Instance
	listedAt  time.Time
	inflight  chan struct{}
	lastError error
}

// NewIndex returns an empty index over the instances of vpcID.
func NewIndex(l Lister, vpcID string) *Index {
	return &Index{lister: l, vpcID: vpcID, MaxAge: 15 * time.Second, MinRefreshInterval: 2 * time.Second, now: time.Now}
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

// freshKey marks a context whose lookups must be answered by a listing
// begun no earlier than the time it holds.
type freshKey struct{}

// Fresh returns a context under which ByID and ByPrivateIP answer only from
// a listing begun now or later: for decisions a stale miss must not make.
func (x *Index) Fresh(ctx context.Context) context.Context {
	return x.Since(ctx, x.now())
}

// Since returns a context under which ByID and ByPrivateIP answer only from
// a listing begun at or after t.
func (x *Index) Since(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshKey{}, t)
}

func (x *Index) lookup(ctx context.Context, find func() *Instance) (*Instance, error) {
	if since, ok := ctx.Value(freshKey{}).(time.Time); ok {
		return x.lookupSince(ctx, since, find)
	}
	for attempt := 0; ; attempt++ {
		x.mu.Lock()
		age := x.now().Sub(x.listedAt)
		if !x.listedAt.IsZero() && age < x.MaxAge {
			if in := find(); in != nil {
				cp := *in
				x.mu.Unlock()
				return &cp, nil
			}
			// A miss on a listing younger than MinRefreshInterval is an
			// authoritative "does not exist".
			if age < x.MinRefreshInterval || attempt > 0 {
				x.mu.Unlock()
				return nil, nil
			}
		} else if attempt > 0 {
			err := x.lastError
			x.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("instance listing of VPC %s did not complete", x.vpcID)
		}
		if err := x.listOrWait(ctx); err != nil {
			return nil, err
		}
	}
}

// Warm runs a listing now, or joins the one in flight, so that the first
// lookups are answered from it; it returns that listing's error.
func (x *Index) Warm(ctx context.Context) error {
	x.mu.Lock()
	if err := x.listOrWait(ctx); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.lastError
}

// listOrWait, called with x.mu held, releases it and either runs a listing
// or waits for the one in flight, so concurrent lookups share one listing.
func (x *Index) listOrWait(ctx context.Context) error {
	wait := x.inflight
	if wait == nil {
		wait = make(chan struct{})
		x.inflight = wait
		x.mu.Unlock()
		x.refresh(ctx, wait)
		return nil
	}
	x.mu.Unlock()
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lookupSince answers from a listing begun at or after since, starting one
// (after any in-flight one, which may have begun earlier) when needed.
func (x *Index) lookupSince(ctx context.Context, since time.Time, find func() *Instance) (*Instance, error) {
	for attempt := 0; ; attempt++ {
		x.mu.Lock()
		if !x.listedAt.IsZero() && !x.listedAt.Before(since) {
			in := find()
			x.mu.Unlock()
			if in == nil {
				return nil, nil
			}
			cp := *in
			return &cp, nil
		}
		if attempt > 1 && x.lastError != nil {
			err := x.lastError
			x.mu.Unlock()
			return nil, err
		}
		if err := x.listOrWait(ctx); err != nil {
			return nil, err
		}
	}
}

func (x *Index) refresh(ctx context.Context, done chan struct{}) {
	start := x.now()
	list, err := x.lister.ListVPCInstances(ctx, x.vpcID)
	x.mu.Lock()
	defer x.mu.Unlock()
	defer close(done)
	x.inflight = nil
	x.lastError = err
	if err != nil {
		klog.ErrorS(err, "Listing VPC instances failed", "vpc", x.vpcID)
		return
	}
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
	klog.V(4).InfoS("Listed VPC instances", "vpc", x.vpcID, "count", len(list), "took", x.now().Sub(start))
}
