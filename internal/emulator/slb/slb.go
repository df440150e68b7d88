// Package slb emulates the SLB (Classic Load Balancer) OpenAPI (version 2014-05-15): load balancers, listeners, vServer groups, ACLs, certificates and tags.
package slb

import (
	"fmt"
	"net/http"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/ecs"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/vpc"
)

// Version is the API version this package serves.
const Version = "2014-05-15"

// PartName is the name of the SLB state part in the store.
const PartName = "slb"

// Service is the emulated slb product.
type Service struct {
	st    *store.Store
	ecs   *ecs.Service
	vpc   *vpc.Service
	state *State
}

// New registers the slb state with st.
func New(st *store.Store, e *ecs.Service, v *vpc.Service) (*Service, error) {
	s := &Service{st: st, ecs: e, vpc: v, state: &State{}}
	if err := st.Register(PartName, s.state); err != nil {
		return nil, fmt.Errorf("register slb state: %w", err)
	}
	return s, nil
}

// Product returns the action table.
func (s *Service) Product() api.Product {
	w := func(h api.Handler) api.Action { return api.Action{Handler: h} }
	r := func(h api.Handler) api.Action { return api.Action{Handler: h, ReadOnly: true} }
	return api.Product{Name: "slb", Version: Version, Host: "slb.aliyuncs.com", RegionRequired: true, UnknownRegion: api.VPCUnknownRegion, Actions: map[string]api.Action{
		// load balancers
		"CreateLoadBalancer":                    w(s.createLoadBalancer),
		"DeleteLoadBalancer":                    w(s.deleteLoadBalancer),
		"DescribeLoadBalancers":                 r(s.describeLoadBalancers),
		"DescribeLoadBalancerAttribute":         r(s.describeLoadBalancerAttribute),
		"SetLoadBalancerName":                   w(s.setLoadBalancerName),
		"SetLoadBalancerStatus":                 w(s.lbSetter("LoadBalancerStatus", setStatus, "active", "inactive")),
		"SetLoadBalancerDeleteProtection":       w(s.lbSetter("DeleteProtection", setDeleteProtection, "on", "off")),
		"SetLoadBalancerModificationProtection": w(s.lbSetter("ModificationProtectionStatus", setModificationProtection, "NonProtection", "ConsoleProtection")),
		"ModifyLoadBalancerInstanceSpec":        w(s.modifyLoadBalancerInstanceSpec),
		"ModifyLoadBalancerInternetSpec":        w(s.modifyLoadBalancerInternetSpec),
		"ModifyLoadBalancerInstanceChargeType":  w(s.modifyLoadBalancerInstanceChargeType),
		"AddBackendServers":                     w(s.addBackendServers),
		"RemoveBackendServers":                  w(s.removeBackendServers),
		"SetBackendServers":                     w(s.setBackendServers),
		"DescribeHealthStatus":                  r(s.describeHealthStatus),
		// listeners
		"CreateLoadBalancerTCPListener":              w(s.createListener("tcp")),
		"CreateLoadBalancerUDPListener":              w(s.createListener("udp")),
		"CreateLoadBalancerHTTPListener":             w(s.createListener("http")),
		"CreateLoadBalancerHTTPSListener":            w(s.createListener("https")),
		"SetLoadBalancerTCPListenerAttribute":        w(s.setListener("tcp")),
		"SetLoadBalancerUDPListenerAttribute":        w(s.setListener("udp")),
		"SetLoadBalancerHTTPListenerAttribute":       w(s.setListener("http")),
		"SetLoadBalancerHTTPSListenerAttribute":      w(s.setListener("https")),
		"DescribeLoadBalancerTCPListenerAttribute":   r(s.describeListener("tcp")),
		"DescribeLoadBalancerUDPListenerAttribute":   r(s.describeListener("udp")),
		"DescribeLoadBalancerHTTPListenerAttribute":  r(s.describeListener("http")),
		"DescribeLoadBalancerHTTPSListenerAttribute": r(s.describeListener("https")),
		"DescribeLoadBalancerListeners":              r(s.describeLoadBalancerListeners),
		"StartLoadBalancerListener":                  w(s.startListener),
		"StopLoadBalancerListener":                   w(s.stopListener),
		"DeleteLoadBalancerListener":                 w(s.deleteListener),
		// vServer groups
		"CreateVServerGroup":               w(s.createVServerGroup),
		"DeleteVServerGroup":               w(s.deleteVServerGroup),
		"DescribeVServerGroups":            r(s.describeVServerGroups),
		"DescribeVServerGroupAttribute":    r(s.describeVServerGroupAttribute),
		"AddVServerGroupBackendServers":    w(s.addVServerGroupBackendServers),
		"RemoveVServerGroupBackendServers": w(s.removeVServerGroupBackendServers),
		"ModifyVServerGroupBackendServers": w(s.modifyVServerGroupBackendServers),
		"SetVServerGroupAttribute":         w(s.setVServerGroupAttribute),
		// tags
		"TagResources":     w(s.tagResources),
		"UntagResources":   w(s.untagResources),
		"ListTagResources": r(s.listTagResources),
		"AddTags":          w(s.addTags),
		"RemoveTags":       w(s.removeTags),
		"DescribeTags":     r(s.describeTags),
		// access control lists
		"CreateAccessControlList":            w(s.createAccessControlList),
		"DeleteAccessControlList":            w(s.deleteAccessControlList),
		"DescribeAccessControlLists":         r(s.describeAccessControlLists),
		"DescribeAccessControlListAttribute": r(s.describeAccessControlListAttribute),
		"SetAccessControlListAttribute":      w(s.setAccessControlListAttribute),
		"AddAccessControlListEntry":          w(s.addAccessControlListEntry),
		"RemoveAccessControlListEntry":       w(s.removeAccessControlListEntry),
		// certificates
		"UploadServerCertificate":    w(s.uploadServerCertificate),
		"DescribeServerCertificates": r(s.describeServerCertificates),
		"DeleteServerCertificate":    w(s.deleteServerCertificate),
		"SetServerCertificateName":   w(s.setServerCertificateName),
		"UploadCACertificate":        w(s.uploadCACertificate),
		"DescribeCACertificates":     r(s.describeCACertificates),
		"DeleteCACertificate":        w(s.deleteCACertificate),
		"SetCACertificateName":       w(s.setCACertificateName),
		// domain extensions
		"CreateDomainExtension":       w(s.createDomainExtension),
		"DeleteDomainExtension":       w(s.deleteDomainExtension),
		"DescribeDomainExtensions":    r(s.describeDomainExtensions),
		"SetDomainExtensionAttribute": w(s.setDomainExtensionAttribute),
	}}
}

// Time layouts the SLB API uses: load balancers report minutes, other
// resources seconds.
const (
	lbTimeLayout  = "2006-01-02T15:04Z"
	resTimeLayout = "2006-01-02T15:04:05Z"
)

func fmtLBTime(t time.Time) string  { return t.UTC().Format(lbTimeLayout) }
func fmtResTime(t time.Time) string { return t.UTC().Format(resTimeLayout) }

// Errors with the codes and messages of the real SLB API.
func errLBNotFound(id string) error {
	return api.NotFound("InvalidLoadBalancerId.NotFound", "The specified LoadBalancerId does not exist: %s.", id)
}

func errListenerNotFound() error {
	return api.NotFound("ListenerNotFound", "The specified resource does not exist.")
}

// errVServerGroupNotFound answers an unknown vServer group as the real API
// does: code InvalidParameter with this message (the Terraform provider's
// DescribeSlbServerGroup and vServer group delete match both), and
// InvalidParameter is a 400 in the common error table.
func errVServerGroupNotFound() error {
	return api.InvalidParameter("VServerGroupId", "The specified VServerGroupId does not exist.")
}

func errNotAllowed(format string, args ...any) error {
	return api.Errorf(http.StatusBadRequest, "Operation.NotAllowed", format, args...)
}

// lb returns a load balancer of the request's region.
func (s *Service) lb(req *api.Request) (*LoadBalancer, error) {
	return api.Lookup(req, "LoadBalancerId", s.regionLB)
}

// regionLB returns the load balancer id of the request's region.
func (s *Service) regionLB(req *api.Request, id string) (*LoadBalancer, error) {
	return api.InRegion(req, s.state.LoadBalancers, id, func(lb *LoadBalancer) string { return lb.RegionID }, errLBNotFound)
}

// removed deletes id from m and answers a delete's empty success.
func removed[T any](m map[string]T, id string) (map[string]any, error) {
	delete(m, id)
	return map[string]any{}, nil
}

// onOff validates an on|off parameter.
func onOff(p api.Params, key, def string) (string, error) {
	return p.Enum(key, def, "on", "off")
}
