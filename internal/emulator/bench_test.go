package emulator_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// BenchmarkDescribeLoadBalancers measures DescribeLoadBalancers through the
// official SDK over loopback against 1,000 load balancers, with signature
// checks and the request log on, as a CCM resync of a large cluster would
// call it. The calls/s metric is the one that matters (target: ≥2,000 on
// two cores).
func BenchmarkDescribeLoadBalancers(b *testing.B) {
	env := emulatortest.Start(b)
	if err := env.Emulator.Store.Settings().SetQuota(store.QuotaSLBInstances, 2000); err != nil {
		b.Fatal(err)
	}
	c := env.SLB(b)
	const total = 1000
	for i := 0; i < total; i++ {
		req := slb.CreateCreateLoadBalancerRequest()
		req.AddressType = "internet"
		req.LoadBalancerName = fmt.Sprintf("bench-%04d", i)
		req.LoadBalancerSpec = "slb.s1.small"
		if _, err := c.CreateLoadBalancer(req); err != nil {
			b.Fatalf("create load balancer %d: %v", i, err)
		}
	}
	check := slb.CreateDescribeLoadBalancersRequest()
	resp, err := c.DescribeLoadBalancers(check)
	if err != nil {
		b.Fatal(err)
	}
	if resp.TotalCount != total {
		b.Fatalf("TotalCount %d, want %d", resp.TotalCount, total)
	}

	var calls atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		cl := env.SLB(b)
		page := 0
		for pb.Next() {
			req := slb.CreateDescribeLoadBalancersRequest()
			req.PageSize = requests.NewInteger(50)
			req.PageNumber = requests.NewInteger(page%20 + 1)
			page++
			r, err := cl.DescribeLoadBalancers(req)
			if err != nil {
				b.Error(err)
				return
			}
			if len(r.LoadBalancers.LoadBalancer) != 50 {
				b.Errorf("page has %d load balancers", len(r.LoadBalancers.LoadBalancer))
				return
			}
			calls.Add(1)
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(calls.Load())/elapsed.Seconds(), "calls/s")
}
