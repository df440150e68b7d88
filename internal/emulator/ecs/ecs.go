// Package ecs emulates the ECS OpenAPI (version 2014-05-26): instances,
// network interfaces, security groups and tags.
package ecs

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2014-05-26"

// Service is the emulated ECS product.
type Service struct {
	st  *store.Store
	vpc *vpc.Service
}

// New registers the ECS state with st.
func New(st *store.Store, v *vpc.Service) (*Service, error) {
	return &Service{st: st, vpc: v}, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	return api.Product{Name: "ecs", Version: Version, Host: "ecs.aliyuncs.com", Actions: map[string]api.Action{}}
}

// Identity returns what the metadata service serves for an instance (""
// means the first instance created); the caller holds the store's lock.
func (s *Service) Identity(instanceID string) (api.InstanceIdentity, bool) {
	return api.InstanceIdentity{}, false
}
