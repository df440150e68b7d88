// Package vpc emulates the VPC OpenAPI (version 2016-04-28): VPCs with their
// vRouter and route tables, vSwitches, route entries and EIPs.
package vpc

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Version is the API version this package serves.
const Version = "2016-04-28"

// Service is the emulated VPC product.
type Service struct {
	st *store.Store
}

// New registers the VPC state with st.
func New(st *store.Store) (*Service, error) {
	return &Service{st: st}, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	return api.Product{Name: "vpc", Version: Version, Host: "vpc.aliyuncs.com", Actions: map[string]api.Action{}}
}
