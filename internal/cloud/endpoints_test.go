package cloud_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/ecs"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/nlb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// hostRecorder fails every request after noting the host it was sent to,
// so the test sees where the SDK resolved each product without a network.
type hostRecorder struct {
	mu    sync.Mutex
	hosts []string
}

func (h *hostRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hosts = append(h.hosts, r.URL.Host)
	return nil, errors.New("recorded, not sent")
}

// TestEndpointHostsResolved: each product's calls go to the host Hosts
// names: the SDK's public regional endpoint by default, the VPC-internal
// <product>-vpc.<region>.aliyuncs.com with UseVPC, and an explicit
// override in either case.
func TestEndpointHostsResolved(t *testing.T) {
	calls := map[cloud.Product]func(context.Context, *cloud.Client) error{
		cloud.ECS: func(ctx context.Context, c *cloud.Client) error {
			_, err := cloud.Do(ctx, c, cloud.ECS, "DescribeInstances", func(cl *cloud.Clients) (*ecs.DescribeInstancesResponse, error) {
				return cl.ECS.DescribeInstances(ecs.CreateDescribeInstancesRequest())
			})
			return err
		},
		cloud.VPC: func(ctx context.Context, c *cloud.Client) error {
			_, err := cloud.Do(ctx, c, cloud.VPC, "DescribeVpcs", func(cl *cloud.Clients) (*vpc.DescribeVpcsResponse, error) {
				return cl.VPC.DescribeVpcs(vpc.CreateDescribeVpcsRequest())
			})
			return err
		},
		cloud.SLB: func(ctx context.Context, c *cloud.Client) error {
			_, err := cloud.Do(ctx, c, cloud.SLB, "DescribeLoadBalancers", func(cl *cloud.Clients) (*slb.DescribeLoadBalancersResponse, error) {
				return cl.SLB.DescribeLoadBalancers(slb.CreateDescribeLoadBalancersRequest())
			})
			return err
		},
		cloud.NLB: func(ctx context.Context, c *cloud.Client) error {
			_, err := cloud.Do(ctx, c, cloud.NLB, "ListLoadBalancers", func(cl *cloud.Clients) (*nlb.ListLoadBalancersResponse, error) {
				return cl.NLB.ListLoadBalancers(nlb.CreateListLoadBalancersRequest())
			})
			return err
		},
	}
	for _, tc := range []struct {
		name      string
		region    string
		endpoints cloud.Endpoints
		want      map[cloud.Product]string
	}{
		{"public", "cn-hangzhou", cloud.Endpoints{}, map[cloud.Product]string{
			cloud.ECS: "ecs-cn-hangzhou.aliyuncs.com", cloud.VPC: "vpc.aliyuncs.com", cloud.SLB: "slb.aliyuncs.com", cloud.NLB: "nlb.cn-hangzhou.aliyuncs.com",
		}},
		{"public, region without endpoint data", "ap-southeast-7", cloud.Endpoints{}, map[cloud.Product]string{
			cloud.ECS: "ecs.ap-southeast-7.aliyuncs.com", cloud.VPC: "vpc.ap-southeast-7.aliyuncs.com", cloud.SLB: "slb.ap-southeast-7.aliyuncs.com", cloud.NLB: "nlb.ap-southeast-7.aliyuncs.com",
		}},
		{"vpc", "cn-hangzhou", cloud.Endpoints{UseVPC: true}, map[cloud.Product]string{
			cloud.ECS: "ecs-vpc.cn-hangzhou.aliyuncs.com", cloud.VPC: "vpc-vpc.cn-hangzhou.aliyuncs.com", cloud.SLB: "slb-vpc.cn-hangzhou.aliyuncs.com", cloud.NLB: "nlb-vpc.cn-hangzhou.aliyuncs.com",
		}},
		{"vpc, explicit overrides win", "cn-beijing", cloud.Endpoints{UseVPC: true, ECS: "ecs.internal.example:8443", NLB: "127.0.0.1:9"}, map[cloud.Product]string{
			cloud.ECS: "ecs.internal.example:8443", cloud.VPC: "vpc-vpc.cn-beijing.aliyuncs.com", cloud.SLB: "slb-vpc.cn-beijing.aliyuncs.com", cloud.NLB: "127.0.0.1:9",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.endpoints.Hosts(tc.region); len(got) != len(tc.want) {
				t.Fatalf("Hosts %v", got)
			} else {
				for p, h := range tc.want {
					if got[p] != h {
						t.Errorf("Hosts[%s] = %q, want %q", p, got[p], h)
					}
				}
			}
			rec := &hostRecorder{}
			c, err := cloud.New(cloud.Options{
				Region: tc.region, Endpoints: tc.endpoints, Transport: rec, MaxAttempts: 1,
				Credentials: cloud.StaticProvider{Creds: cloud.NewCredentials("ak", "sk", "", time.Time{})},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range cloud.Products {
				rec.hosts = nil
				if err := calls[p](context.Background(), c); err == nil {
					t.Fatalf("%s: the recording transport let a call through", p)
				}
				if len(rec.hosts) != 1 || rec.hosts[0] != tc.want[p] {
					t.Errorf("%s calls went to %v, want %s", p, rec.hosts, tc.want[p])
				}
			}
		})
	}
}
