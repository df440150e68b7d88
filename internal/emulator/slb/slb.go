// Package slb emulates the SLB (Classic Load Balancer) OpenAPI (version 2014-05-15): load balancers, listeners, vServer groups, ACLs, certificates and tags.
package slb

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2014-05-15"

// Service is the emulated slb product.
type Service struct {
	st  *store.Store
	ecs *ecs.Service
	vpc *vpc.Service
}

// New registers the slb state with st.
func New(st *store.Store, e *ecs.Service, v *vpc.Service) (*Service, error) {
	return &Service{st: st, ecs: e, vpc: v}, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	return api.Product{Name: "slb", Version: Version, Host: "slb.aliyuncs.com", Actions: map[string]api.Action{}}
}
