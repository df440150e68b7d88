package nlb

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Server group and server statuses as the list actions report them.
const (
	SGCreating        = "Creating"
	SGConfiguring     = "Configuring"
	SGAvailable       = "Available"
	ServerAdding      = "Adding"
	ServerConfiguring = "Configuring"
	ServerAvailable   = "Available"
)

// maxServerGroups is the documented number of server groups per region.
const maxServerGroups = 3000

// ServerGroup is an NLB server group.
type ServerGroup struct {
	// ID is the ServerGroupId (sgp-...).
	ID string `json:"id"`
	// Name is the ServerGroupName.
	Name string `json:"name"`
	// Type is the ServerGroupType: Instance (default; Ecs, Eni, Eci servers)
	// or Ip.
	Type string `json:"type"`
	// AddressIPVersion is ipv4 (default) or DualStack.
	AddressIPVersion string `json:"addressIpVersion"`
	// VpcID is the VPC the servers must be in (vpc-...).
	VpcID string `json:"vpcId"`
	// RegionID is the group's region.
	RegionID string `json:"regionId"`
	// AccountID is the owning account (the caller's).
	AccountID string `json:"accountId"`
	// ResourceGroupID is the resource group (rg-...; the account default when
	// not given).
	ResourceGroupID string `json:"resourceGroupId"`
	// Protocol is TCP (default), UDP or TCPSSL; listeners using the group
	// must match.
	Protocol string `json:"protocol"`
	// Scheduler is the balancing algorithm: Wrr (default), Rr, Sch, Tch, Qch
	// or Wlc.
	Scheduler string `json:"scheduler"`
	// AnyPortEnabled forwards every port (servers have port 0); fixed at
	// create.
	AnyPortEnabled bool `json:"anyPortEnabled"`
	// ConnectionDrainEnabled keeps connections to removed servers for
	// ConnectionDrainTimeout.
	ConnectionDrainEnabled bool `json:"connectionDrainEnabled"`
	// ConnectionDrainTimeout is the draining time in seconds, 0-900 (default
	// 10).
	ConnectionDrainTimeout int `json:"connectionDrainTimeout"`
	// PreserveClientIPEnabled makes servers see client source addresses.
	PreserveClientIPEnabled bool `json:"preserveClientIpEnabled"`
	// PersistenceEnabled turns on client IP session persistence.
	PersistenceEnabled bool `json:"persistenceEnabled"`
	// PersistenceTimeout is the persistence time in seconds, 0-3600.
	PersistenceTimeout int `json:"persistenceTimeout"`
	// HealthCheck is the group's HealthCheckConfig (default: enabled TCP
	// checks).
	HealthCheck HealthCheck `json:"healthCheck"`
	// Servers are the backends, in the order added.
	Servers []*Server `json:"servers"`
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// servergroup).
	Tags []api.Tag `json:"tags,omitempty"`
	// CreatedAt is when the group was created.
	CreatedAt time.Time `json:"createdAt"`
	// jobTimes end the Creating status, an update's Configuring status
	// and the lock of the last job on the group.
	jobTimes
	// deletion is set for a group whose create job failed: it disappears
	// (rolled back) then. A deleted group goes at once: only its job
	// reports Processing.
	deletion
	// Seq orders groups by creation, for stable listings.
	Seq int64 `json:"seq"`
}

// HealthCheck is a server group's health check configuration.
type HealthCheck struct {
	// Enabled is HealthCheckEnabled (default true).
	Enabled bool `json:"enabled"`
	// Type is the HealthCheckType: TCP (default), HTTP or UDP.
	Type string `json:"type"`
	// ConnectPort is the port probed, 0 (the server's port) to 65535.
	ConnectPort int `json:"connectPort"`
	// ConnectTimeout is the probe timeout in seconds, 1-300 (default 5).
	ConnectTimeout int `json:"connectTimeout"`
	// Interval is the seconds between probes, 1-50 (default 10).
	Interval int `json:"interval"`
	// Healthy is the HealthyThreshold: successes to turn healthy, 2-10
	// (default 2).
	Healthy int `json:"healthy"`
	// Unhealthy is the UnhealthyThreshold: failures to turn unhealthy, 2-10
	// (default 2).
	Unhealthy int `json:"unhealthy"`
	// Domain is the HealthCheckDomain of HTTP checks.
	Domain string `json:"domain,omitempty"`
	// URL is the HealthCheckUrl of HTTP checks, starting with / (default /).
	URL string `json:"url,omitempty"`
	// Method is the HttpCheckMethod of HTTP checks: GET (default) or HEAD.
	Method string `json:"method,omitempty"`
	// HTTPCodes are the healthy HTTP status classes: http_2xx, http_3xx,
	// http_4xx, http_5xx.
	HTTPCodes []string `json:"httpCodes,omitempty"`
}

// Server is a backend of a server group.
type Server struct {
	// ID is the ServerId: an instance (i-...), ENI (eni-...), ECI or, for Ip
	// servers, the address itself.
	ID string `json:"id"`
	// Type is the ServerType: Ecs, Eni, Eci or Ip.
	Type string `json:"type"`
	// IP is the ServerIp the traffic goes to.
	IP string `json:"ip"`
	// Port is the backend port, 0-65535 (0 in any-port groups).
	Port int `json:"port"`
	// Weight is 0-100 (default 100); 0 sends no new connections.
	Weight int `json:"weight"`
	// Description is the server's free-text Description.
	Description string `json:"description,omitempty"`
	// ZoneID is the server's zone, when known.
	ZoneID string `json:"zoneId,omitempty"`
	// ReadyAt ends the Adding status after the server was added.
	ReadyAt time.Time `json:"readyAt"`
	// ConfiguringUntil ends the Configuring status of an attribute update.
	ConfiguringUntil time.Time `json:"configuringUntil"`
	// Seq orders servers by when they were added, for stable listings.
	Seq int64 `json:"seq,omitempty"`
}

func (g *ServerGroup) status(now time.Time) string {
	return phase(now, g.ReadyAt, g.ConfiguringUntil, SGCreating, SGConfiguring, SGAvailable)
}

func (sv *Server) status(now time.Time) string {
	return phase(now, sv.ReadyAt, sv.ConfiguringUntil, ServerAdding, ServerConfiguring, ServerAvailable)
}

// phase is the status at now of something created until ready and
// configured until configuring: the statuses are computed, so reads never
// mutate.
func phase(now, ready, configuring time.Time, creating, configuringStatus, settled string) string {
	switch {
	case now.Before(ready):
		return creating
	case now.Before(configuring):
		return configuringStatus
	}
	return settled
}

func (s *Service) serverGroup(req *api.Request, id string) (*ServerGroup, error) {
	g, ok := s.state.ServerGroups[id]
	if !ok || g.RegionID != req.RegionID || g.gone(req.Now) {
		return nil, errServerGroupNotFound(id)
	}
	return g, nil
}

// sgForUpdate returns the group named by ServerGroupId unless a job on it
// is in flight.
func (s *Service) sgForUpdate(req *api.Request) (*ServerGroup, error) {
	g, err := api.Lookup(req, "ServerGroupId", s.serverGroup)
	if err != nil {
		return nil, err
	}
	if req.Now.Before(g.BusyUntil) {
		return nil, errLock(g.ID)
	}
	return g, nil
}

// lockSG starts a job on a server group, which stays Configuring and locked
// until the job is done.
func (s *Service) lockSG(req *api.Request, g *ServerGroup) *Job {
	j := s.startJob(req, "servergroup", g.ID)
	// Callers went through sgForUpdate, so the group is past Creating.
	g.BusyUntil, g.ConfiguringUntil = j.DoneAt, j.DoneAt
	return j
}

// sortedServerGroups lists the groups that exist at now, oldest first.
func (s *Service) sortedServerGroups(now time.Time) []*ServerGroup {
	all := store.ByCreation(s.state.ServerGroups, func(g *ServerGroup) int64 { return g.Seq })
	return slices.DeleteFunc(all, func(g *ServerGroup) bool { return g.gone(now) })
}

var httpCodes = []string{"http_2xx", "http_3xx", "http_4xx", "http_5xx"}

// parseHealthCheck applies HealthCheckConfig.* on top of base.
func parseHealthCheck(p api.Params, base HealthCheck) (HealthCheck, error) {
	o := p.Object("HealthCheckConfig")
	hc := base
	var err error
	if hc.Enabled, err = o.Bool("HealthCheckEnabled", base.Enabled); err != nil {
		return hc, err
	}
	if hc.Type, err = canonical(o, "HealthCheckType", base.Type, facts.Enum("nlb:HealthCheckType")...); err != nil {
		return hc, err
	}
	ints := []struct {
		key      string
		dst      *int
		min, max int
	}{
		{key: "HealthCheckConnectPort", dst: &hc.ConnectPort},
		{key: "HealthCheckConnectTimeout", dst: &hc.ConnectTimeout},
		{key: "HealthCheckInterval", dst: &hc.Interval},
		{key: "HealthyThreshold", dst: &hc.Healthy},
		{key: "UnhealthyThreshold", dst: &hc.Unhealthy},
	}
	for _, f := range ints {
		f.min, f.max = facts.Range("nlb:" + f.key)
		if *f.dst, err = o.IntRange(f.key, *f.dst, f.min, f.max); err != nil {
			return hc, api.InvalidParameter("HealthCheckConfig."+f.key, "The parameter HealthCheckConfig.%s must be between %d and %d.", f.key, f.min, f.max)
		}
	}
	if o.Has("HealthCheckDomain") {
		hc.Domain = o.String("HealthCheckDomain")
	}
	if o.Has("HealthCheckUrl") {
		hc.URL = o.String("HealthCheckUrl")
		if hc.URL != "" && !strings.HasPrefix(hc.URL, "/") {
			return hc, api.InvalidParameter("HealthCheckConfig.HealthCheckUrl", "The parameter HealthCheckConfig.HealthCheckUrl must start with '/'.")
		}
	}
	if hc.Method, err = canonical(o, "HttpCheckMethod", base.Method, facts.Enum("nlb:HttpCheckMethod")...); err != nil {
		return hc, err
	}
	if codes := o.List("HealthCheckHttpCode"); len(codes) > 0 {
		for _, c := range codes {
			if !slices.Contains(httpCodes, c) {
				return hc, api.InvalidParameter("HealthCheckConfig.HealthCheckHttpCode", "The parameter HealthCheckConfig.HealthCheckHttpCode must be among %s, got %q.", strings.Join(httpCodes, ", "), c)
			}
		}
		hc.HTTPCodes = dedupe(codes)
	}
	if hc.Type == "HTTP" {
		if hc.URL == "" {
			hc.URL = "/"
		}
		if hc.Method == "" {
			hc.Method = "GET"
		}
		if len(hc.HTTPCodes) == 0 {
			hc.HTTPCodes = []string{"http_2xx"}
		}
	}
	return hc, nil
}

// sgOptions are the tunables CreateServerGroup and UpdateServerGroupAttribute share.
func parseSGOptions(p api.Params, g *ServerGroup) error {
	var err error
	if g.Scheduler, err = canonical(p, "Scheduler", g.Scheduler, facts.Enum("nlb:Scheduler")...); err != nil {
		return err
	}
	if g.ConnectionDrainEnabled, err = p.Bool("ConnectionDrainEnabled", g.ConnectionDrainEnabled); err != nil {
		return err
	}
	if g.ConnectionDrainTimeout, err = p.IntRange("ConnectionDrainTimeout", g.ConnectionDrainTimeout, drainMin, drainMax); err != nil {
		return err
	}
	if g.PreserveClientIPEnabled, err = p.Bool("PreserveClientIpEnabled", g.PreserveClientIPEnabled); err != nil {
		return err
	}
	if g.PersistenceEnabled, err = p.Bool("PersistenceEnabled", g.PersistenceEnabled); err != nil {
		return err
	}
	if g.PersistenceTimeout, err = p.IntRange("PersistenceTimeout", g.PersistenceTimeout, persistMin, persistMax); err != nil {
		return err
	}
	g.HealthCheck, err = parseHealthCheck(p, g.HealthCheck)
	return err
}

func (s *Service) createServerGroup(req *api.Request) (map[string]any, error) {
	p := req.Params
	name, err := p.Required("ServerGroupName")
	if err != nil {
		return nil, err
	}
	if err := validName("ServerGroupName", name); err != nil {
		return nil, err
	}
	typ, err := canonical(p, "ServerGroupType", "Instance", facts.Enum("nlb:ServerGroupType")...)
	if err != nil {
		return nil, err
	}
	vpcID, err := s.requestedVPCID(req)
	if err != nil {
		return nil, err
	}
	proto, err := canonical(p, "Protocol", "TCP", "TCP", "UDP", "TCPSSL")
	if err != nil {
		return nil, err
	}
	ipVersion, err := canonical(p, "AddressIPVersion", "ipv4", "ipv4", "DualStack")
	if err != nil {
		return nil, err
	}
	anyPort, err := p.Bool("AnyPortEnabled", false)
	if err != nil {
		return nil, err
	}
	g := &ServerGroup{
		ID: store.NewID("sgp"), Name: name, Type: typ, AddressIPVersion: ipVersion, VpcID: vpcID, RegionID: req.RegionID,
		AccountID: req.AccountID, ResourceGroupID: p.String("ResourceGroupId"), Protocol: proto, Scheduler: "Wrr",
		AnyPortEnabled: anyPort, ConnectionDrainTimeout: 10,
		HealthCheck: HealthCheck{Enabled: true, Type: "TCP", ConnectTimeout: 5, Interval: 10, Healthy: 2, Unhealthy: 2},
		Servers:     []*Server{}, CreatedAt: req.Now,
	}
	if g.ResourceGroupID == "" {
		g.ResourceGroupID = api.DefaultResourceGroupID
	}
	if err := parseSGOptions(p, g); err != nil {
		return nil, err
	}
	if g.Protocol == "UDP" && g.HealthCheck.Type == "TCP" && !p.Has("HealthCheckConfig.HealthCheckType") {
		g.HealthCheck.Type = "UDP"
	}
	g.Tags = p.Tags()
	if err := s.validTags(g.Tags); err != nil {
		return nil, err
	}
	if api.Count(s.state.ServerGroups, func(o *ServerGroup) bool { return o.RegionID == req.RegionID }) >= maxServerGroups {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.ServerGroupsNum", "The number of server groups exceeds the quota of %d.", maxServerGroups)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	g.Seq = s.state.next()
	s.state.ServerGroups[g.ID] = g
	j := s.startJob(req, "servergroup", g.ID)
	g.ReadyAt, g.BusyUntil = j.DoneAt, j.DoneAt
	return map[string]any{"ServerGroupId": g.ID, "JobId": j.ID}, nil
}

// relatedLBs lists the load balancers whose listeners forward to group id.
func (s *Service) relatedLBs(now time.Time, id string) []string {
	var out []string
	for _, l := range s.sortedListeners(now) {
		if l.ServerGroupID == id && !slices.Contains(out, l.LoadBalancerID) {
			out = append(out, l.LoadBalancerID)
		}
	}
	return out
}

func (s *Service) sgView(g *ServerGroup, now time.Time) map[string]any {
	hc := map[string]any{
		"HealthCheckEnabled": g.HealthCheck.Enabled, "HealthCheckType": g.HealthCheck.Type,
		"HealthCheckConnectPort": g.HealthCheck.ConnectPort, "HealthCheckConnectTimeout": g.HealthCheck.ConnectTimeout,
		"HealthCheckInterval": g.HealthCheck.Interval, "HealthyThreshold": g.HealthCheck.Healthy,
		"UnhealthyThreshold": g.HealthCheck.Unhealthy, "HealthCheckHttpCode": nonNil(g.HealthCheck.HTTPCodes),
	}
	if g.HealthCheck.Domain != "" {
		hc["HealthCheckDomain"] = g.HealthCheck.Domain
	}
	if g.HealthCheck.URL != "" {
		hc["HealthCheckUrl"] = g.HealthCheck.URL
	}
	if g.HealthCheck.Method != "" {
		hc["HttpCheckMethod"] = g.HealthCheck.Method
	}
	return map[string]any{
		"RegionId": g.RegionID, "ServerGroupId": g.ID, "ServerGroupName": g.Name, "ServerGroupType": g.Type,
		"AddressIPVersion": g.AddressIPVersion, "VpcId": g.VpcID, "Scheduler": g.Scheduler, "Protocol": g.Protocol,
		"PersistenceEnabled": g.PersistenceEnabled, "PersistenceTimeout": g.PersistenceTimeout,
		"ConnectionDrainEnabled": g.ConnectionDrainEnabled, "ConnectionDrainTimeout": g.ConnectionDrainTimeout,
		"PreserveClientIpEnabled": g.PreserveClientIPEnabled, "AnyPortEnabled": g.AnyPortEnabled,
		"ResourceGroupId": api.ResourceGroupOr(g.ResourceGroupID), "ServerGroupStatus": g.status(now), "AliUid": aliUID(g.AccountID),
		"ServerCount": len(g.Servers), "RelatedLoadBalancerIds": nonNil(s.relatedLBs(now, g.ID)),
		"HealthCheck": hc, "Tags": api.TagMaps(g.Tags, "Key", "Value"),
	}
}

func (s *Service) listServerGroups(req *api.Request) (map[string]any, error) {
	p := req.Params
	ids, names := p.List("ServerGroupIds"), p.List("ServerGroupNames")
	typ, vpcID, rg := p.String("ServerGroupType"), p.String("VpcId"), p.String("ResourceGroupId")
	tags := p.Tags()
	var match []*ServerGroup
	for _, g := range s.sortedServerGroups(req.Now) {
		if g.RegionID != req.RegionID || (len(ids) > 0 && !slices.Contains(ids, g.ID)) || (len(names) > 0 && !slices.Contains(names, g.Name)) ||
			(typ != "" && !strings.EqualFold(typ, g.Type)) || (vpcID != "" && vpcID != g.VpcID) ||
			(rg != "" && rg != g.ResourceGroupID) || !api.MatchTags(g.Tags, tags) {
			continue
		}
		match = append(match, g)
	}
	return cursorList(p, match, func(g *ServerGroup) string { return api.SeqKey(g.Seq) }, "ServerGroups",
		func(g *ServerGroup) map[string]any { return s.sgView(g, req.Now) })
}

func (s *Service) updateServerGroupAttribute(req *api.Request) (map[string]any, error) {
	g, err := s.sgForUpdate(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	name := p.String("ServerGroupName")
	if err := validName("ServerGroupName", name); err != nil {
		return nil, err
	}
	upd := *g
	if err := parseSGOptions(p, &upd); err != nil {
		return nil, err
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	if name != "" {
		upd.Name = name
	}
	*g = upd
	return map[string]any{"ServerGroupId": g.ID, "JobId": s.lockSG(req, g).ID}, nil
}

func (s *Service) deleteServerGroup(req *api.Request) (map[string]any, error) {
	g, err := s.sgForUpdate(req)
	if err != nil {
		return nil, err
	}
	for _, l := range s.sortedListeners(req.Now) {
		if l.ServerGroupID == g.ID {
			return nil, api.Errorf(http.StatusBadRequest, "ResourceInUse.ServerGroup", "The server group %s is in use by listener %s.", g.ID, l.ID)
		}
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	delete(s.state.ServerGroups, g.ID)
	j := s.startJob(req, "servergroup", g.ID)
	return map[string]any{"ServerGroupId": g.ID, "JobId": j.ID}, nil
}

// serverSpec is one validated Servers.N entry.
type serverSpec struct {
	index       int
	ID, Type    string
	IP          string
	Port        int
	hasPort     bool
	Weight      int
	hasWeight   bool
	Description string
	hasDesc     bool
}

// parseServers validates the shape of Servers.N against group g.
func (s *Service) parseServers(req *api.Request, g *ServerGroup) ([]serverSpec, error) {
	objs := req.Params.Objects("Servers")
	if len(objs) == 0 {
		return nil, api.MissingParameter("Servers")
	}
	if q := s.st.Settings().Quota(store.QuotaNLBServersPerCall); len(objs) > q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.ServersNum", "At most %d servers can be changed in one call, got %d.", q, len(objs))
	}
	out := make([]serverSpec, 0, len(objs))
	for i, o := range objs {
		n := i + 1
		sp := serverSpec{index: n, ID: o.String("ServerId"), IP: o.String("ServerIp"), Description: o.String("Description"), hasDesc: o.Has("Description")}
		if sp.ID == "" {
			return nil, api.MissingParameter(fmt.Sprintf("Servers.%d.ServerId", n))
		}
		if o.String("ServerType") == "" {
			return nil, api.MissingParameter(fmt.Sprintf("Servers.%d.ServerType", n))
		}
		typ, err := canonical(o, "ServerType", "", "Ecs", "Eni", "Eci", "Ip")
		if err != nil {
			return nil, api.InvalidParameter(fmt.Sprintf("Servers.%d.ServerType", n), "The parameter Servers.%d.ServerType must be one of Ecs, Eni, Eci, Ip.", n)
		}
		sp.Type = typ
		if (g.Type == "Ip") != (typ == "Ip") {
			return nil, api.InvalidParameter(fmt.Sprintf("Servers.%d.ServerType", n), "A server group of type %s does not take servers of type %s.", g.Type, typ)
		}
		if typ == "Ip" {
			if sp.IP == "" {
				sp.IP = sp.ID
			}
			a, err := netip.ParseAddr(sp.IP)
			if err != nil || sp.IP != sp.ID || (g.AddressIPVersion == "ipv4" && !a.Is4()) {
				return nil, api.InvalidParameter(fmt.Sprintf("Servers.%d.ServerIp", n), "The server %s of type Ip must name a valid IP address as both ServerId and ServerIp.", sp.ID)
			}
		}
		if o.String("Port") != "" {
			sp.hasPort = true
			p, err := strconv.Atoi(o.String("Port"))
			if err != nil || p < 0 || p > 65535 {
				return nil, api.InvalidParameter(fmt.Sprintf("Servers.%d.Port", n), "The parameter Servers.%d.Port must be between 0 and 65535.", n)
			}
			sp.Port = p
		}
		if o.String("Weight") != "" {
			sp.hasWeight = true
			w, err := strconv.Atoi(o.String("Weight"))
			if wMin, wMax := facts.Range("nlb:Weight"); err != nil || w < wMin || w > wMax {
				return nil, api.InvalidParameter(fmt.Sprintf("Servers.%d.Weight", n), "The parameter Servers.%d.Weight must be between %d and %d.", n, wMin, wMax)
			}
			sp.Weight = w
		}
		out = append(out, sp)
	}
	return out, nil
}

// find returns the index of the group's server matching sp (by id, port
// and, when given, IP), or -1.
func (g *ServerGroup) find(sp serverSpec) int {
	for i, sv := range g.Servers {
		if sv.ID == sp.ID && (sp.IP == "" || sv.IP == sp.IP) && (!sp.hasPort || g.AnyPortEnabled || sv.Port == sp.Port) {
			return i
		}
	}
	return -1
}

// resolveServer checks that a new backend exists in the group's VPC and
// returns its IP and zone.
func (s *Service) resolveServer(g *ServerGroup, sp serverSpec) (ip, zone string, err error) {
	switch sp.Type {
	case "Ecs":
		inst, ok := s.ecs.Instance(sp.ID)
		if !ok || inst.VpcID != g.VpcID || inst.RegionID != g.RegionID {
			return "", "", errServerNotFound(sp.ID)
		}
		if sp.IP != "" && sp.IP != inst.PrivateIP {
			return "", "", api.InvalidParameter("ServerIp", "The IP %s is not the private IP of instance %s.", sp.IP, sp.ID)
		}
		return inst.PrivateIP, inst.ZoneID, nil
	case "Eni", "Eci":
		if sp.IP == "" {
			return "", "", api.MissingParameter(fmt.Sprintf("Servers.%d.ServerIp", sp.index))
		}
		e, ok := s.ecs.ENIByIP(g.VpcID, sp.IP)
		if !ok || (sp.Type == "Eni" && e.ID != sp.ID) {
			return "", "", errServerNotFound(sp.ID)
		}
		return sp.IP, e.ZoneID, nil
	}
	return sp.IP, "", nil
}

func (s *Service) addServers(req *api.Request) (map[string]any, error) {
	g, err := s.sgForUpdate(req)
	if err != nil {
		return nil, err
	}
	specs, err := s.parseServers(req, g)
	if err != nil {
		return nil, err
	}
	var added []*Server
	for _, sp := range specs {
		if !g.AnyPortEnabled && (!sp.hasPort || sp.Port == 0) {
			return nil, api.MissingParameter(fmt.Sprintf("Servers.%d.Port", sp.index))
		}
		if g.AnyPortEnabled {
			sp.Port = 0
		}
		ip, zone, err := s.resolveServer(g, sp)
		if err != nil {
			return nil, err
		}
		sp.IP = ip
		sp.hasPort = true
		if g.find(sp) >= 0 {
			return nil, api.Errorf(http.StatusBadRequest, "DuplicatedParam.Server", "The server %s (%s:%d) is already in server group %s.", sp.ID, ip, sp.Port, g.ID)
		}
		for _, a := range added {
			if a.ID == sp.ID && a.IP == ip && a.Port == sp.Port {
				return nil, api.Errorf(http.StatusBadRequest, "DuplicatedParam.Server", "The server %s (%s:%d) is specified more than once.", sp.ID, ip, sp.Port)
			}
		}
		w := 100
		if sp.hasWeight {
			w = sp.Weight
		}
		added = append(added, &Server{ID: sp.ID, Type: sp.Type, IP: ip, Port: sp.Port, Weight: w, Description: sp.Description, ZoneID: zone, Seq: s.state.next()})
	}
	if q := s.st.Settings().Quota(store.QuotaNLBServersPerGroup); len(g.Servers)+len(added) > q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.ServersNum", "Server group %s would have %d servers; the quota is %d.", g.ID, len(g.Servers)+len(added), q)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	j := s.lockSG(req, g)
	for _, sv := range added {
		sv.ReadyAt = j.DoneAt
	}
	g.Servers = append(g.Servers, added...)
	return map[string]any{"ServerGroupId": g.ID, "JobId": j.ID}, nil
}

// matchExisting resolves every spec to an index of g.Servers, failing with
// ResourceNotFound.BackendServer for a server not in the group.
func matchExisting(g *ServerGroup, specs []serverSpec) ([]int, error) {
	idx := make([]int, 0, len(specs))
	for _, sp := range specs {
		i := g.find(sp)
		if i < 0 {
			return nil, errServerNotFound(sp.ID)
		}
		idx = append(idx, i)
	}
	return idx, nil
}

// existingServers resolves the servers of a remove or update call: the
// group, the parsed specs and the index of each in the group, after the
// DryRun check, so the caller only changes state.
func (s *Service) existingServers(req *api.Request) (*ServerGroup, []serverSpec, []int, error) {
	g, err := s.sgForUpdate(req)
	if err != nil {
		return nil, nil, nil, err
	}
	specs, err := s.parseServers(req, g)
	if err != nil {
		return nil, nil, nil, err
	}
	idx, err := matchExisting(g, specs)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := dryRun(req); err != nil {
		return nil, nil, nil, err
	}
	return g, specs, idx, nil
}

func (s *Service) removeServers(req *api.Request) (map[string]any, error) {
	g, _, idx, err := s.existingServers(req)
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	for _, i := range idx {
		drop[i] = true
	}
	keep := make([]*Server, 0, len(g.Servers))
	for i, sv := range g.Servers {
		if !drop[i] {
			keep = append(keep, sv)
		}
	}
	g.Servers = keep
	return map[string]any{"ServerGroupId": g.ID, "JobId": s.lockSG(req, g).ID}, nil
}

func (s *Service) updateServers(req *api.Request) (map[string]any, error) {
	g, specs, idx, err := s.existingServers(req)
	if err != nil {
		return nil, err
	}
	j := s.lockSG(req, g)
	for k, i := range idx {
		sv, sp := g.Servers[i], specs[k]
		if sp.hasWeight {
			sv.Weight = sp.Weight
		}
		if sp.hasDesc {
			sv.Description = sp.Description
		}
		if !req.Now.Before(sv.ReadyAt) {
			sv.ConfiguringUntil = j.DoneAt
		}
	}
	return map[string]any{"ServerGroupId": g.ID, "JobId": j.ID}, nil
}

func (s *Service) listServerGroupServers(req *api.Request) (map[string]any, error) {
	p := req.Params
	var groups []*ServerGroup
	if id := p.String("ServerGroupId"); id != "" {
		g, err := s.serverGroup(req, id)
		if err != nil {
			return nil, err
		}
		groups = []*ServerGroup{g}
	} else {
		for _, g := range s.sortedServerGroups(req.Now) {
			if g.RegionID == req.RegionID {
				groups = append(groups, g)
			}
		}
	}
	ids, ips := p.List("ServerIds"), p.List("ServerIps")
	type item struct {
		key string
		out map[string]any
	}
	var rows []item
	for _, g := range groups {
		for _, sv := range g.Servers {
			if (len(ids) > 0 && !slices.Contains(ids, sv.ID)) || (len(ips) > 0 && !slices.Contains(ips, sv.IP)) {
				continue
			}
			row := map[string]any{
				"ServerGroupId": g.ID, "ServerId": sv.ID, "ServerIp": sv.IP, "ServerType": sv.Type, "Port": sv.Port,
				"Weight": sv.Weight, "Description": sv.Description, "Status": sv.status(req.Now),
			}
			if sv.ZoneID != "" {
				row["ZoneId"] = sv.ZoneID
			}
			// Servers are matched by id and port; their group's and their
			// own creation order keep the listing's order.
			rows = append(rows, item{fmt.Sprintf("%s/%s/%s/%05d", api.SeqKey(g.Seq), api.SeqKey(sv.Seq), sv.ID, sv.Port), row})
		}
	}
	return cursorList(p, rows, func(r item) string { return r.key }, "Servers", func(r item) map[string]any { return r.out })
}
