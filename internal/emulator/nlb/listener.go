package nlb

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Listener statuses as ListListeners reports them.
const (
	LsnProvisioning = "Provisioning"
	LsnRunning      = "Running"
	LsnConfiguring  = "Configuring"
	LsnStarting     = "Starting"
	LsnStopping     = "Stopping"
	LsnStopped      = "Stopped"
	// LsnDeleting is reported from DeleteListener (or its LB's deletion)
	// until the job ends; the listener keeps its port and server group
	// until then.
	LsnDeleting = "Deleting"
)

// maxAdditionalCertificates is the documented number of additional
// certificates of one TCPSSL listener.
const maxAdditionalCertificates = 25

// Listener is an NLB listener.
type Listener struct {
	// ID is the ListenerId (lsn-...).
	ID string `json:"id"`
	// LoadBalancerID is the load balancer (nlb-...) the listener belongs to.
	LoadBalancerID string `json:"loadBalancerId"`
	// RegionID is the listener's region.
	RegionID string `json:"regionId"`
	// Protocol is the ListenerProtocol: TCP, UDP or TCPSSL.
	Protocol string `json:"protocol"`
	// Port is the listener port; 0 for an any-port listener that uses
	// StartPort..EndPort instead.
	Port int `json:"port"`
	// StartPort is the first port of an any-port listener's range; 0
	// otherwise.
	StartPort int `json:"startPort,omitempty"`
	// EndPort is the last port of an any-port listener's range; 0 otherwise.
	EndPort int `json:"endPort,omitempty"`
	// Description is the ListenerDescription, 2-256 characters or empty.
	Description string `json:"description,omitempty"`
	// ServerGroupID is the server group (sgp-...) the listener forwards to;
	// its protocol matches.
	ServerGroupID string `json:"serverGroupId"`
	// IdleTimeout is the connection idle timeout in seconds: 10-900,
	// default 900 (UDP listeners: 10-20, default 20).
	IdleTimeout int `json:"idleTimeout"`
	// SecurityPolicyID is a TCPSSL listener's TLS security policy.
	SecurityPolicyID string `json:"securityPolicyId,omitempty"`
	// CertificateIDs holds a TCPSSL listener's one default server
	// certificate.
	CertificateIDs []string `json:"certificateIds,omitempty"`
	// AdditionalCertIDs are the extra server certificates of a TCPSSL
	// listener (at most 25).
	AdditionalCertIDs []string `json:"additionalCertIds,omitempty"`
	// CACertificateIDs are the CA certificates for mutual TLS (TCPSSL).
	CACertificateIDs []string `json:"caCertificateIds,omitempty"`
	// CAEnabled turns on mutual TLS; it needs CACertificateIDs.
	CAEnabled bool `json:"caEnabled"`
	// AlpnEnabled turns on ALPN for a TCPSSL listener.
	AlpnEnabled bool `json:"alpnEnabled"`
	// AlpnPolicy is HTTP1Only, HTTP2Only, HTTP2Preferred or HTTP2Optional.
	AlpnPolicy string `json:"alpnPolicy,omitempty"`
	// ProxyProtocolEnabled passes client addresses to servers with the PROXY
	// protocol.
	ProxyProtocolEnabled bool `json:"proxyProtocolEnabled"`
	// ProxyProtocolV2 says which identifiers the Proxy Protocol v2 header
	// carries (ppv2.go).
	ProxyProtocolV2 PPv2Config `json:"proxyProtocolV2Config"`
	// SecSensorEnabled turns on second-level monitoring metrics.
	SecSensorEnabled bool `json:"secSensorEnabled"`
	// Cps is the listener's new-connections-per-second limit, 0 (unlimited)
	// to 1000000.
	Cps int `json:"cps"`
	// Mss is the TCP maximum segment size in bytes, 0 (not set) to 1500.
	Mss int `json:"mss"`
	// Tags are set by Tag.N on create and TagResources (ResourceType
	// listener).
	Tags []api.Tag `json:"tags,omitempty"`
	// Status is the settled status (Running or Stopped); Transition is
	// reported instead until TransitionUntil, so reads never mutate.
	Status string `json:"status"`
	// Transition is the transient status (Provisioning, Configuring,
	// Starting, Stopping) reported until TransitionUntil.
	Transition string `json:"transition,omitempty"`
	// TransitionUntil is when Transition gives way to Status (the end of the
	// job).
	TransitionUntil time.Time `json:"transitionUntil"`
	// CreatedAt is when the listener was created.
	CreatedAt time.Time `json:"createdAt"`
	// deletion is the listener's deletion job: Deleting before, gone
	// after.
	deletion
	// Seq orders listeners by creation, for stable listings.
	Seq int64 `json:"seq"`
}

func (l *Listener) status(now time.Time) string {
	if !l.DeletedAt.IsZero() {
		return LsnDeleting
	}
	if l.Transition != "" && now.Before(l.TransitionUntil) {
		return l.Transition
	}
	return l.Status
}

// portRange is the span of ports a listener occupies.
func (l *Listener) portRange() (int, int) {
	if l.Port != 0 {
		return l.Port, l.Port
	}
	return l.StartPort, l.EndPort
}

// transport groups protocols that share a port space: TCPSSL terminates on
// TCP, so a TCP and a TCPSSL listener cannot share a port.
func transport(proto string) string {
	if proto == "UDP" {
		return "UDP"
	}
	return "TCP"
}

func (s *Service) listener(req *api.Request, id string) (*Listener, error) {
	l, ok := s.state.Listeners[id]
	if !ok || l.RegionID != req.RegionID || s.listenerGone(l, req.Now) {
		return nil, errListenerNotFound(id)
	}
	return l, nil
}

// requestedListener returns the listener named by the request's required ListenerId.
func (s *Service) requestedListener(req *api.Request) (*Listener, error) {
	return api.Lookup(req, "ListenerId", s.listener)
}

// listenerGone reports whether l or its load balancer finished deleting.
func (s *Service) listenerGone(l *Listener, now time.Time) bool {
	if l.gone(now) {
		return true
	}
	lb, ok := s.state.LoadBalancers[l.LoadBalancerID]
	return !ok || lb.gone(now)
}

// listenerStatus is l's status, Deleting while its LB is.
func (s *Service) listenerStatus(l *Listener, now time.Time) string {
	if lb, ok := s.state.LoadBalancers[l.LoadBalancerID]; ok && !lb.DeletedAt.IsZero() {
		return LsnDeleting
	}
	return l.status(now)
}

// listenerForUpdate returns the listener named by ListenerId and its LB,
// unless the LB is Provisioning or locked by a job in flight.
func (s *Service) listenerForUpdate(req *api.Request) (*Listener, *LoadBalancer, error) {
	l, err := s.requestedListener(req)
	if err != nil {
		return nil, nil, err
	}
	lb, err := s.lb(req, l.LoadBalancerID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkLBMutable(req, lb); err != nil {
		return nil, nil, err
	}
	return l, lb, nil
}

// transition starts a job on a listener's LB; the listener reports
// transient until the job is done, then settles.
func (s *Service) transition(req *api.Request, l *Listener, lb *LoadBalancer, transient, settled string) *Job {
	j := s.lockLB(req, lb, false)
	l.Transition, l.TransitionUntil, l.Status = transient, j.DoneAt, settled
	return j
}

// sortedListeners lists the listeners that exist at now, oldest first.
func (s *Service) sortedListeners(now time.Time) []*Listener {
	all := store.ByCreation(s.state.Listeners, func(l *Listener) int64 { return l.Seq })
	return slices.DeleteFunc(all, func(l *Listener) bool { return s.listenerGone(l, now) })
}

// checkServerGroupFor verifies that group id can serve listener l of lb.
func (s *Service) checkServerGroupFor(req *api.Request, id string, l *Listener, lb *LoadBalancer) error {
	g, err := s.serverGroup(req, id)
	if err != nil {
		return err
	}
	if req.Now.Before(g.ReadyAt) {
		return errIncorrectStatus("serverGroup", g.ID)
	}
	if g.VpcID != lb.VpcID {
		return api.InvalidParameter("ServerGroupId", "The server group %s is in VPC %s, the load balancer %s in VPC %s.", g.ID, g.VpcID, lb.ID, lb.VpcID)
	}
	okProto := g.Protocol == l.Protocol || (l.Protocol == "TCPSSL" && g.Protocol == "TCP")
	if !okProto {
		return api.InvalidParameter("ServerGroupId", "The protocol %s of server group %s does not match the listener protocol %s.", g.Protocol, g.ID, l.Protocol)
	}
	if g.AnyPortEnabled != (l.Port == 0) {
		return api.InvalidParameter("ServerGroupId", "An any-port listener needs an any-port server group and the other way round; server group %s has AnyPortEnabled=%t.", g.ID, g.AnyPortEnabled)
	}
	return nil
}

// parseListenerOptions applies the settable attributes shared by
// CreateListener and UpdateListenerAttribute to l.
func parseListenerOptions(p api.Params, l *Listener) error {
	var err error
	if p.Has("ListenerDescription") {
		d := p.String("ListenerDescription")
		if n := len([]rune(d)); n > 256 || (n > 0 && n < 2) {
			return api.InvalidParameter("ListenerDescription", "The parameter ListenerDescription must be 2 to 256 characters.")
		}
		l.Description = d
	}
	idleMin, idleMax := facts.Range("nlb:IdleTimeout/TCP")
	if l.Protocol == "UDP" {
		idleMin, idleMax = facts.Range("nlb:IdleTimeout/UDP")
	}
	if l.IdleTimeout, err = p.IntRange("IdleTimeout", l.IdleTimeout, idleMin, idleMax); err != nil {
		return err
	}
	if l.ProxyProtocolEnabled, err = p.Bool("ProxyProtocolEnabled", l.ProxyProtocolEnabled); err != nil {
		return err
	}
	if err := parsePPv2(p, &l.ProxyProtocolV2); err != nil {
		return err
	}
	if l.SecSensorEnabled, err = p.Bool("SecSensorEnabled", l.SecSensorEnabled); err != nil {
		return err
	}
	if l.Cps, err = p.IntRange("Cps", l.Cps, cpsMin, cpsMax); err != nil {
		return err
	}
	if l.Mss, err = p.IntRange("Mss", l.Mss, 0, 1500); err != nil {
		return err
	}
	if l.Protocol != "TCPSSL" {
		// Explicit "false" flags are fine: clients send them for every protocol.
		for _, k := range []string{"CertificateIds.1", "CaCertificateIds.1", "SecurityPolicyId", "AlpnEnabled", "CaEnabled"} {
			if v := p.String(k); v != "" && v != "false" {
				return api.InvalidParameter(k, "The parameter %s applies to TCPSSL listeners only.", k)
			}
		}
		return nil
	}
	if certs := p.List("CertificateIds"); len(certs) > 0 {
		if len(certs) > 1 {
			return api.InvalidParameter("CertificateIds", "A listener has exactly one default server certificate; use AssociateAdditionalCertificatesWithListener for more.")
		}
		l.CertificateIDs = certs
	}
	if cas := p.List("CaCertificateIds"); len(cas) > 0 {
		l.CACertificateIDs = cas
	}
	if l.CAEnabled, err = p.Bool("CaEnabled", l.CAEnabled); err != nil {
		return err
	}
	if l.CAEnabled && len(l.CACertificateIDs) == 0 {
		return api.MissingParameter("CaCertificateIds")
	}
	if v := p.String("SecurityPolicyId"); v != "" {
		l.SecurityPolicyID = v
	}
	if l.AlpnEnabled, err = p.Bool("AlpnEnabled", l.AlpnEnabled); err != nil {
		return err
	}
	if l.AlpnPolicy, err = canonical(p, "AlpnPolicy", l.AlpnPolicy, facts.Enum("nlb:AlpnPolicy")...); err != nil {
		return err
	}
	if l.AlpnEnabled && l.AlpnPolicy == "" {
		return api.MissingParameter("AlpnPolicy")
	}
	return nil
}

// parsePorts reads ListenerPort or StartPort/EndPort.
func parsePorts(p api.Params) (port, start, end int, err error) {
	if port, err = p.IntRange("ListenerPort", 0, 0, 65535); err != nil {
		return
	}
	if start, err = p.IntRange("StartPort", 0, 0, 65535); err != nil {
		return
	}
	if end, err = p.IntRange("EndPort", 0, 0, 65535); err != nil {
		return
	}
	switch {
	case port == 0 && start == 0 && end == 0:
		err = api.MissingParameter("ListenerPort")
	case port == 0 && (start == 0 || end == 0):
		err = api.MissingParameter(map[bool]string{true: "StartPort", false: "EndPort"}[start == 0])
	case port == 0 && start > end:
		err = api.InvalidParameter("StartPort", "The StartPort %d must not be greater than EndPort %d.", start, end)
	case port != 0:
		start, end = 0, 0
	}
	return
}

// portConflict returns a listener of lb whose ports overlap l's on the
// same transport, other than l itself.
func (s *Service) portConflict(now time.Time, lb string, l *Listener) *Listener {
	lo, hi := l.portRange()
	for _, o := range s.sortedListeners(now) {
		if o.LoadBalancerID != lb || o.ID == l.ID || transport(o.Protocol) != transport(l.Protocol) {
			continue
		}
		olo, ohi := o.portRange()
		if lo <= ohi && olo <= hi {
			return o
		}
	}
	return nil
}

func (s *Service) createListener(req *api.Request) (map[string]any, error) {
	p := req.Params
	lb, err := s.lbParam(req)
	if err != nil {
		return nil, err
	}
	proto, err := requiredCanonical(p, "ListenerProtocol", facts.Enum("nlb:ListenerProtocol")...)
	if err != nil {
		return nil, err
	}
	port, start, end, err := parsePorts(p)
	if err != nil {
		return nil, err
	}
	sgID, err := p.Required("ServerGroupId")
	if err != nil {
		return nil, err
	}
	l := &Listener{
		ID: store.NewID("lsn"), LoadBalancerID: lb.ID, RegionID: req.RegionID, Protocol: proto,
		Port: port, StartPort: start, EndPort: end, ServerGroupID: sgID, IdleTimeout: 900, CreatedAt: req.Now,
	}
	if proto == "UDP" {
		// The documented default of UDP listeners (CreateListenerRequest.IdleTimeout).
		l.IdleTimeout = 20
	}
	if err := parseListenerOptions(p, l); err != nil {
		return nil, err
	}
	if proto == "TCPSSL" {
		if len(l.CertificateIDs) == 0 {
			return nil, api.MissingParameter("CertificateIds")
		}
		if l.SecurityPolicyID == "" {
			l.SecurityPolicyID = "tls_cipher_policy_1_0"
		}
	}
	l.Tags = p.Tags()
	if err := s.validTags(l.Tags); err != nil {
		return nil, err
	}
	if err := s.checkLBMutable(req, lb); err != nil {
		return nil, err
	}
	if err := s.checkServerGroupFor(req, sgID, l, lb); err != nil {
		return nil, err
	}
	if o := s.portConflict(req.Now, lb.ID, l); o != nil {
		lo, hi := o.portRange()
		return nil, api.Errorf(http.StatusBadRequest, "Conflict.Port", "The port %s of load balancer %s conflicts with listener %s (%s %d-%d).", portText(l), lb.ID, o.ID, o.Protocol, lo, hi)
	}
	count := api.Count(s.state.Listeners, func(o *Listener) bool { return o.LoadBalancerID == lb.ID })
	if q := s.st.Settings().Quota(store.QuotaNLBListenersPerLB); count >= q {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.ListenersNum", "The number of listeners of load balancer %s exceeds the quota of %d.", lb.ID, q)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	l.Seq = s.state.next()
	s.state.Listeners[l.ID] = l
	j := s.transition(req, l, lb, LsnProvisioning, LsnRunning)
	return map[string]any{"ListenerId": l.ID, "JobId": j.ID}, nil
}

func portText(l *Listener) string {
	if l.Port != 0 {
		return strconv.Itoa(l.Port)
	}
	return fmt.Sprintf("%d-%d", l.StartPort, l.EndPort)
}

func (s *Service) listenerView(l *Listener, now time.Time) map[string]any {
	out := map[string]any{
		"RegionId": l.RegionID, "LoadBalancerId": l.LoadBalancerID, "ListenerId": l.ID, "ListenerProtocol": l.Protocol,
		"ListenerPort": l.Port, "ListenerDescription": l.Description, "ServerGroupId": l.ServerGroupID,
		"IdleTimeout": l.IdleTimeout, "CaEnabled": l.CAEnabled, "AlpnEnabled": l.AlpnEnabled,
		"ProxyProtocolEnabled": l.ProxyProtocolEnabled, "SecSensorEnabled": l.SecSensorEnabled,
		"ListenerStatus": s.listenerStatus(l, now), "Cps": l.Cps, "Mss": l.Mss,
		"CertificateIds": nonNil(l.CertificateIDs), "CaCertificateIds": nonNil(l.CACertificateIDs),
		"Tags": api.TagMaps(l.Tags, "Key", "Value"), "ProxyProtocolV2Config": ppv2View(l.ProxyProtocolV2),
	}
	if l.Port == 0 {
		out["StartPort"], out["EndPort"] = strconv.Itoa(l.StartPort), strconv.Itoa(l.EndPort)
	}
	if l.SecurityPolicyID != "" {
		out["SecurityPolicyId"] = l.SecurityPolicyID
	}
	if l.AlpnPolicy != "" {
		out["AlpnPolicy"] = l.AlpnPolicy
	}
	return out
}

func (s *Service) getListenerAttribute(req *api.Request) (map[string]any, error) {
	l, err := s.requestedListener(req)
	if err != nil {
		return nil, err
	}
	return s.listenerView(l, req.Now), nil
}

func (s *Service) listListeners(req *api.Request) (map[string]any, error) {
	p := req.Params
	lbs, ids := p.List("LoadBalancerIds"), p.List("ListenerIds")
	proto := p.String("ListenerProtocol")
	if proto != "" {
		var err error
		if proto, err = canonical(p, "ListenerProtocol", "", facts.Enum("nlb:ListenerProtocol")...); err != nil {
			return nil, err
		}
	}
	tags := p.Tags()
	var match []*Listener
	for _, l := range s.sortedListeners(req.Now) {
		if l.RegionID != req.RegionID || (len(lbs) > 0 && !slices.Contains(lbs, l.LoadBalancerID)) ||
			(len(ids) > 0 && !slices.Contains(ids, l.ID)) || (proto != "" && proto != l.Protocol) || !api.MatchTags(l.Tags, tags) {
			continue
		}
		match = append(match, l)
	}
	return cursorList(p, match, func(l *Listener) string { return api.SeqKey(l.Seq) }, "Listeners",
		func(l *Listener) map[string]any { return s.listenerView(l, req.Now) })
}

func (s *Service) updateListenerAttribute(req *api.Request) (map[string]any, error) {
	l, lb, err := s.listenerForUpdate(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	upd := *l
	if err := parseListenerOptions(p, &upd); err != nil {
		return nil, err
	}
	if l.Port == 0 && (p.String("StartPort") != "" || p.String("EndPort") != "") {
		if upd.StartPort, err = p.IntRange("StartPort", l.StartPort, 1, 65535); err != nil {
			return nil, err
		}
		if upd.EndPort, err = p.IntRange("EndPort", l.EndPort, 1, 65535); err != nil {
			return nil, err
		}
		if upd.StartPort > upd.EndPort {
			return nil, api.InvalidParameter("StartPort", "The StartPort %d must not be greater than EndPort %d.", upd.StartPort, upd.EndPort)
		}
		if o := s.portConflict(req.Now, lb.ID, &upd); o != nil {
			return nil, api.Errorf(http.StatusBadRequest, "Conflict.Port", "The port %s of load balancer %s conflicts with listener %s.", portText(&upd), lb.ID, o.ID)
		}
	}
	if sg := p.String("ServerGroupId"); sg != "" && sg != l.ServerGroupID {
		if err := s.checkServerGroupFor(req, sg, &upd, lb); err != nil {
			return nil, err
		}
		upd.ServerGroupID = sg
	}
	return s.reconfigureListener(req, l, lb, func() { *l = upd })
}

// reconfigureListener applies change to l unless the request is a dry
// run, and answers the job during which l reports Configuring.
func (s *Service) reconfigureListener(req *api.Request, l *Listener, lb *LoadBalancer, change func()) (map[string]any, error) {
	if err := dryRun(req); err != nil {
		return nil, err
	}
	change()
	return map[string]any{"JobId": s.transition(req, l, lb, LsnConfiguring, l.Status).ID}, nil
}

func (s *Service) deleteListener(req *api.Request) (map[string]any, error) {
	l, lb, err := s.listenerForUpdate(req)
	if err != nil {
		return nil, err
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	j := s.lockLB(req, lb, false)
	l.DeletedAt = j.DoneAt
	return map[string]any{"JobId": j.ID}, nil
}

func (s *Service) startListener(req *api.Request) (map[string]any, error) {
	return s.switchListener(req, LsnStopped, LsnStarting, LsnRunning)
}

func (s *Service) stopListener(req *api.Request) (map[string]any, error) {
	return s.switchListener(req, LsnRunning, LsnStopping, LsnStopped)
}

// switchListener moves a listener that is in status from through via to
// to, as a job; NLB refuses a start or stop from any other status.
func (s *Service) switchListener(req *api.Request, from, via, to string) (map[string]any, error) {
	l, lb, err := s.listenerForUpdate(req)
	if err != nil {
		return nil, err
	}
	if l.status(req.Now) != from {
		return nil, errIncorrectStatus("listener", l.ID)
	}
	if err := dryRun(req); err != nil {
		return nil, err
	}
	return map[string]any{"JobId": s.transition(req, l, lb, via, to).ID}, nil
}

func (s *Service) listListenerCertificates(req *api.Request) (map[string]any, error) {
	l, err := s.requestedListener(req)
	if err != nil {
		return nil, err
	}
	typ, err := canonical(req.Params, "CertType", "", "Server", "Ca")
	if err != nil {
		return nil, err
	}
	type cert struct {
		id, typ string
		def     bool
	}
	var certs []cert
	if typ == "" || typ == "Server" {
		for i, c := range l.CertificateIDs {
			certs = append(certs, cert{c, "Server", i == 0})
		}
		for _, c := range l.AdditionalCertIDs {
			certs = append(certs, cert{c, "Server", false})
		}
	}
	if typ == "" || typ == "Ca" {
		for _, c := range l.CACertificateIDs {
			certs = append(certs, cert{c, "Ca", false})
		}
	}
	// Server certificates first (the default one leading), then CA ones;
	// by id within each, so the cursor survives associations between pages.
	certs, keys := api.SortByKey(certs, func(c cert) string {
		rank := map[bool]string{true: "0", false: "1"}[c.def]
		if c.typ == "Ca" {
			rank = "2"
		}
		return rank + "/" + c.id
	})
	maxResults, start, end, next, err := req.Params.Cursor(keys, 20, 100, "")
	if err != nil {
		return nil, err
	}
	ids := []string{}
	rows := []map[string]any{}
	for _, c := range certs[start:end] {
		ids = append(ids, c.id)
		rows = append(rows, map[string]any{"CertificateId": c.id, "IsDefault": c.def, "Status": "Associated", "CertificateType": c.typ})
	}
	return map[string]any{"CertificateIds": ids, "Certificates": rows, "TotalCount": len(certs), "MaxResults": maxResults, "NextToken": next}, nil
}

// certListener returns a TCPSSL listener for the additional-certificate
// actions and the AdditionalCertificateIds.N of the call.
func (s *Service) certListener(req *api.Request) (*Listener, *LoadBalancer, []string, error) {
	l, lb, err := s.listenerForUpdate(req)
	if err != nil {
		return nil, nil, nil, err
	}
	if l.Protocol != "TCPSSL" {
		return nil, nil, nil, api.InvalidParameter("ListenerId", "Only a TCPSSL listener has certificates; %s is %s.", l.ID, l.Protocol)
	}
	ids := dedupe(req.Params.List("AdditionalCertificateIds"))
	if len(ids) == 0 {
		return nil, nil, nil, api.MissingParameter("AdditionalCertificateIds")
	}
	return l, lb, ids, nil
}

func (s *Service) associateCertificates(req *api.Request) (map[string]any, error) {
	l, lb, ids, err := s.certListener(req)
	if err != nil {
		return nil, err
	}
	next := append([]string(nil), l.AdditionalCertIDs...)
	for _, id := range ids {
		if slices.Contains(l.CertificateIDs, id) || slices.Contains(next, id) {
			return nil, api.Errorf(http.StatusBadRequest, "ResourceAlreadyAssociated.certificate", "The certificate %s is already associated with listener %s.", id, l.ID)
		}
		next = append(next, id)
	}
	if len(next) > maxAdditionalCertificates {
		return nil, api.Errorf(http.StatusBadRequest, "QuotaExceeded.AdditionalCertificatesNum", "A listener can have at most %d additional certificates.", maxAdditionalCertificates)
	}
	return s.reconfigureListener(req, l, lb, func() { l.AdditionalCertIDs = next })
}

func (s *Service) disassociateCertificates(req *api.Request) (map[string]any, error) {
	l, lb, ids, err := s.certListener(req)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !slices.Contains(l.AdditionalCertIDs, id) {
			return nil, api.NotFound("ResourceNotFound.certificate", "The certificate %s is not an additional certificate of listener %s.", id, l.ID)
		}
	}
	return s.reconfigureListener(req, l, lb, func() {
		l.AdditionalCertIDs = without(l.AdditionalCertIDs, ids)
	})
}
