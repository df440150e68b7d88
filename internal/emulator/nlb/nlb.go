// Package nlb emulates the NLB (Network Load Balancer) OpenAPI (version 2022-04-30): load balancers, server groups, listeners, security groups, tags and asynchronous jobs.
package nlb

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2022-04-30"

// Service is the emulated nlb product.
type Service struct {
	st  *store.Store
	ecs *ecs.Service
	vpc *vpc.Service
}

// New registers the nlb state with st.
func New(st *store.Store, e *ecs.Service, v *vpc.Service) (*Service, error) {
	return &Service{st: st, ecs: e, vpc: v}, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	return api.Product{Name: "nlb", Version: Version, Host: "nlb.aliyuncs.com", Actions: map[string]api.Action{}}
}
