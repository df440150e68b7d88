package slb

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/facts"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

func itoa(n int) string { return strconv.Itoa(n) }

// backendReq is one entry of a BackendServers JSON parameter, with its
// keys matched case-insensitively and numbers accepted as strings or
// numbers, because the docs and the existing CCM disagree on both.
type backendReq struct {
	ServerID, ServerIP, Type, Description string
	Port, Weight                          int
	HasPort, HasWeight                    bool
}

func jsonInt(key string, v any) (int, error) {
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return 0, fmt.Errorf("%s must be an integer", key)
		}
		return int(x), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("%s must be an integer, got %q", key, x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s must be an integer", key)
}

func jsonString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// parseBackends decodes a BackendServers-style parameter and enforces the
// per-call limit.
func (s *Service) parseBackends(p api.Params, key string, required bool) ([]backendReq, error) {
	raw, ok := p.Get(key)
	if !ok || raw == "" {
		if required {
			return nil, api.MissingParameter(key)
		}
		return nil, nil
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, api.InvalidParameter(key, "The parameter %s is not a valid JSON array of backend servers: %v", key, err)
	}
	if limit := s.st.Settings().Quota(store.QuotaSLBBackendsPerCall); len(items) > limit {
		return nil, api.Errorf(http.StatusBadRequest, "TooManyBackendServers", "The number of backend servers in one request exceeds the max supported number: %d.", limit)
	}
	out := make([]backendReq, 0, len(items))
	for _, it := range items {
		var b backendReq
		for k, v := range it {
			var err error
			switch strings.ToLower(k) {
			case "serverid":
				b.ServerID = jsonString(v)
			case "serverip":
				b.ServerIP = jsonString(v)
			case "type":
				b.Type = strings.ToLower(jsonString(v))
			case "description":
				b.Description = jsonString(v)
			case "port":
				b.Port, err = jsonInt("Port", v)
				b.HasPort = true
			case "weight":
				b.Weight, err = jsonInt("Weight", v)
				b.HasWeight = true
			}
			if err != nil {
				return nil, api.InvalidParameter(key, "The parameter %s is not valid: %v.", key, err)
			}
		}
		if b.ServerID == "" {
			return nil, api.InvalidParameter(key, "Every backend server in %s needs a ServerId.", key)
		}
		if b.Type == "" {
			b.Type = "ecs"
		}
		if wMin, wMax := facts.Range("slb:Weight"); b.HasWeight && (b.Weight < wMin || b.Weight > wMax) {
			return nil, api.InvalidParameter("Weight", "The weight of backend server %s must be between %d and %d, got %d.", b.ServerID, wMin, wMax, b.Weight)
		}
		if b.HasPort && (b.Port < 1 || b.Port > 65535) {
			return nil, api.InvalidParameter("Port", "The specified Port must be between 1 and 65535.")
		}
		out = append(out, b)
	}
	return out, nil
}

// resolveBackend checks that a backend exists where the load balancer can
// reach it: an ECS instance (in the LB's VPC for a VPC load balancer), or
// an ENI holding ServerIp.
func (s *Service) resolveBackend(lb *LoadBalancer, b backendReq) (Backend, error) {
	out := Backend{ServerID: b.ServerID, Type: b.Type, Port: b.Port, Weight: 100, Description: b.Description}
	if b.HasWeight {
		out.Weight = b.Weight
	}
	switch b.Type {
	case "ecs":
		inst, ok := s.ecs.Instance(b.ServerID)
		if !ok || (inst.RegionID != "" && inst.RegionID != lb.RegionID) || (lb.VpcID != "" && inst.VpcID != lb.VpcID) {
			return Backend{}, api.Errorf(http.StatusBadRequest, "InvalidServerId.NotFound", "The specified ServerId %s does not exist in the network of load balancer %s.", b.ServerID, lb.ID)
		}
		out.ServerIP, out.VpcID = inst.PrivateIP, inst.VpcID
		if b.ServerIP != "" && b.ServerIP != inst.PrivateIP {
			return Backend{}, api.InvalidParameter("ServerIp", "The ServerIp %s is not the address of instance %s.", b.ServerIP, b.ServerID)
		}
	case "eni":
		if b.ServerIP == "" {
			return Backend{}, api.MissingParameter("ServerIp")
		}
		var eniVpc string
		found := false
		if lb.VpcID != "" {
			if e, ok := s.ecs.ENIByIP(lb.VpcID, b.ServerIP); ok && e.ID == b.ServerID {
				found, eniVpc = true, e.VpcID
			}
		} else if e, ok := s.ecs.ENI(b.ServerID); ok {
			for _, ip := range e.PrivateIPs {
				if ip == b.ServerIP {
					found, eniVpc = true, e.VpcID
				}
			}
		}
		if !found {
			return Backend{}, api.Errorf(http.StatusBadRequest, "InvalidServerId.NotFound", "The specified ENI %s holding %s does not exist in the network of load balancer %s.", b.ServerID, b.ServerIP, lb.ID)
		}
		out.ServerIP, out.VpcID = b.ServerIP, eniVpc
	default:
		return Backend{}, api.InvalidParameter("Type", "The backend server type must be ecs or eni, got %q.", b.Type)
	}
	return out, nil
}

// backendCount is the number of backend entries attached to a load
// balancer, which the per-instance quota limits.
func (s *Service) backendCount(lb *LoadBalancer) int {
	n := len(lb.BackendServers)
	for _, g := range s.state.VServerGroups {
		if g.LoadBalancerID == lb.ID {
			n += len(g.Backends)
		}
	}
	return n
}

func (s *Service) checkBackendQuota(lb *LoadBalancer, added int) error {
	if q := s.st.Settings().Quota(store.QuotaSLBBackendsPerLB); s.backendCount(lb)+added > q {
		return api.Errorf(http.StatusBadRequest, "InstanceBackendServerNumberOverLimit", "The backend server number has reached to the quota limit of this load balancer: %d.", q)
	}
	return nil
}

// withAdded is members with the servers reqs name merged in (resolve
// checks and completes them), within lb's backend quota; members as they
// were on an error.
func (s *Service) withAdded(lb *LoadBalancer, members []Backend, reqs []backendReq, resolve func(*LoadBalancer, []backendReq) ([]Backend, error)) ([]Backend, error) {
	add, err := resolve(lb, reqs)
	if err != nil {
		return members, err
	}
	if err := s.checkBackendQuota(lb, countNew(members, add)); err != nil {
		return members, err
	}
	merged, _ := mergeBackends(members, add)
	return merged, nil
}

// mergeBackends adds or updates members; it returns how many are new.
func mergeBackends(list []Backend, add []Backend) ([]Backend, int) {
	idx := map[string]int{}
	for i, b := range list {
		idx[b.key()] = i
	}
	added := 0
	for _, b := range add {
		if i, ok := idx[b.key()]; ok {
			list[i] = b
			continue
		}
		idx[b.key()] = len(list)
		list = append(list, b)
		added++
	}
	return list, added
}

func countNew(list []Backend, add []Backend) int {
	have := map[string]bool{}
	for _, b := range list {
		have[b.key()] = true
	}
	n := 0
	for _, b := range add {
		if !have[b.key()] {
			have[b.key()] = true
			n++
		}
	}
	return n
}

// matchBackend compares a requested backend with a member: ServerIp and
// Port only count when the request gives them.
func matchBackend(m Backend, r backendReq) bool {
	if m.ServerID != r.ServerID || m.Type != r.Type {
		return false
	}
	if r.HasPort && m.Port != r.Port {
		return false
	}
	if r.ServerIP != "" && m.ServerIP != r.ServerIP {
		return false
	}
	return true
}

func backendViews(list []Backend, withPort bool) []map[string]any {
	out := make([]map[string]any, 0, len(list))
	for _, b := range list {
		m := map[string]any{
			"ServerId": b.ServerID, "ServerIp": b.ServerIP, "Type": b.Type,
			"Weight": b.Weight, "Description": b.Description, "VpcId": b.VpcID,
		}
		if withPort {
			m["Port"] = b.Port
		}
		out = append(out, m)
	}
	return out
}

// Default server group of a load balancer (AddBackendServers & co).

func (s *Service) resolveAll(lb *LoadBalancer, reqs []backendReq) ([]Backend, error) {
	out := make([]Backend, 0, len(reqs))
	for _, r := range reqs {
		b, err := s.resolveBackend(lb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func defaultBackendResponse(lb *LoadBalancer, stringWeight bool) map[string]any {
	views := backendViews(lb.BackendServers, false)
	if stringWeight {
		for _, v := range views {
			v["Weight"] = strconv.Itoa(v["Weight"].(int))
		}
	}
	return map[string]any{"LoadBalancerId": lb.ID, "BackendServers": map[string]any{"BackendServer": views}}
}

// backendChange returns the load balancer an Add/RemoveBackendServers
// request names and the BackendServers it lists.
func (s *Service) backendChange(req *api.Request) (*LoadBalancer, []backendReq, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, nil, err
	}
	reqs, err := s.parseBackends(req.Params, "BackendServers", true)
	if err != nil {
		return nil, nil, err
	}
	return lb, reqs, nil
}

func (s *Service) addBackendServers(req *api.Request) (map[string]any, error) {
	lb, reqs, err := s.backendChange(req)
	if err != nil {
		return nil, err
	}
	if lb.BackendServers, err = s.withAdded(lb, lb.BackendServers, reqs, s.resolveAll); err != nil {
		return nil, err
	}
	return defaultBackendResponse(lb, true), nil
}

func (s *Service) removeBackendServers(req *api.Request) (map[string]any, error) {
	lb, reqs, err := s.backendChange(req)
	if err != nil {
		return nil, err
	}
	lb.BackendServers = removeMatching(lb.BackendServers, reqs)
	return defaultBackendResponse(lb, false), nil
}

func removeMatching(list []Backend, reqs []backendReq) []Backend {
	out := list[:0]
	for _, m := range list {
		drop := false
		for _, r := range reqs {
			if matchBackend(m, r) {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, m)
		}
	}
	return out
}

func (s *Service) setBackendServers(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	reqs, err := s.parseBackends(req.Params, "BackendServers", false)
	if err != nil {
		return nil, err
	}
	reweigh(lb.BackendServers, reqs)
	return defaultBackendResponse(lb, true), nil
}

// reweigh sets the weight and description each request gives (when it
// gives them) on the members it matches; members no request names keep
// theirs, as Set*BackendServers does.
func reweigh(members []Backend, reqs []backendReq) {
	for _, r := range reqs {
		for i := range members {
			if !matchBackend(members[i], r) {
				continue
			}
			if r.HasWeight {
				members[i].Weight = r.Weight
			}
			if r.Description != "" {
				members[i].Description = r.Description
			}
		}
	}
}

// describeHealthStatus reports each backend of each listener (optionally
// one ListenerPort and ListenerProtocol): the members of the listener's
// vServer group, or of the default server group on BackendServerPort. The
// emulator runs no probes: a running listener's backends are normal or,
// when ecs.BackendHealth finds them down (instance stopped or gone, check
// port not listening), abnormal; a stopped listener's, or one whose health
// check is off, are unavailable, as the API reports them.
func (s *Service) describeHealthStatus(req *api.Request) (map[string]any, error) {
	lb, err := s.lb(req)
	if err != nil {
		return nil, err
	}
	p := req.Params
	port := 0
	if p.String("ListenerPort") != "" {
		if port, err = p.IntRange("ListenerPort", 0, 1, 65535); err != nil {
			return nil, err
		}
	}
	proto := strings.ToLower(p.String("ListenerProtocol"))
	if proto != "" && fieldsByProto[proto] == nil {
		return nil, api.InvalidParameter("ListenerProtocol", "The parameter ListenerProtocol must be one of tcp, udp, http, https, got %q.", p.String("ListenerProtocol"))
	}
	rows := []map[string]any{}
	for _, l := range lb.sortedListeners() {
		if (port != 0 && l.Port != port) || (proto != "" && l.Protocol != proto) {
			continue
		}
		// unavailable: the listener is not running or checks nothing.
		checked := l.status(req) == "running" && l.Config["HealthCheckSwitch"] != "off" && l.Config["HealthCheck"] != "off"
		checkPort, _ := strconv.Atoi(l.Config["HealthCheckConnectPort"])
		members := lb.BackendServers
		if g := s.state.VServerGroups[l.VServerGroupID]; g != nil {
			members = g.Backends
		}
		for _, b := range members {
			bp := b.Port
			if bp == 0 {
				bp = l.BackendServerPort
			}
			health := "unavailable"
			if checked {
				port := bp
				if checkPort > 0 {
					port = checkPort
				}
				health = "normal"
				if s.ecs != nil && s.ecs.BackendHealth(b.ServerID, port, req.Now) != "" {
					health = "abnormal"
				}
			}
			rows = append(rows, map[string]any{"ListenerPort": l.Port, "Protocol": strings.ToUpper(l.Protocol),
				"ServerId": b.ServerID, "ServerIp": b.ServerIP, "Port": bp, "ServerHealthStatus": health, "EniHost": ""})
		}
	}
	return map[string]any{"BackendServers": map[string]any{"BackendServer": rows}}, nil
}
