package slb_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// BenchmarkDescribeLoadBalancers pages through 1,000 tagged load balancers
// with PageSize 100 through the official SDK over loopback; the calls/s
// metric is what the ≥2,000 calls/s target is about.
func BenchmarkDescribeLoadBalancers(b *testing.B) {
	env := emulatortest.Start(b)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(env.Emulator.Store.Settings().SetQuota(store.QuotaSLBInstances, 2000))
	env.Seed(b, &api.Seed{VPCs: []api.SeedVPC{{ID: testVPC, CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{
		{ID: testVSwitch, ZoneID: testZone, CIDRBlock: "192.168.0.0/20"},
	}}}})
	c := env.SLB(b)
	const total = 1000
	for i := 0; i < total; i++ {
		r := slb.CreateCreateLoadBalancerRequest()
		r.AddressType, r.VSwitchId, r.LoadBalancerSpec = "intranet", testVSwitch, "slb.s1.small"
		r.LoadBalancerName = fmt.Sprintf("bench-%04d", i)
		r.Tag = &[]slb.CreateLoadBalancerTag{{Key: "kubernetes.do.not.delete", Value: "svc"}, {Key: "cluster", Value: "c1"}}
		_, err := c.CreateLoadBalancer(r)
		must(err)
	}
	for _, size := range []int{10, 100} {
		b.Run(fmt.Sprintf("PageSize%d", size), func(b *testing.B) {
			pages := total / size
			var calls atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				cl := env.SLB(b)
				n := 0
				for pb.Next() {
					r := slb.CreateDescribeLoadBalancersRequest()
					r.PageSize, r.PageNumber = requests.NewInteger(size), requests.NewInteger(n%pages+1)
					n++
					resp, err := cl.DescribeLoadBalancers(r)
					if err != nil {
						b.Error(err)
						return
					}
					if resp.TotalCount != total || len(resp.LoadBalancers.LoadBalancer) != size {
						b.Errorf("TotalCount %d, page of %d", resp.TotalCount, len(resp.LoadBalancers.LoadBalancer))
						return
					}
					calls.Add(1)
				}
			})
			b.ReportMetric(float64(calls.Load())/time.Since(start).Seconds(), "calls/s")
		})
	}
}
