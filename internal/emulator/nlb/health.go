package nlb

import (
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
)

// Health answers of a server in GetListenerHealthStatus: only servers that
// are not healthy are listed (NonNormalServers).
const (
	// ServerHealthInitial is a server still being added.
	ServerHealthInitial = "Initial"
	// ServerHealthUnhealthy is a server whose check fails.
	ServerHealthUnhealthy = "Unhealthy"
)

// reasonCodes maps the emulator's health model (ecs.BackendHealth) to the
// reason codes of GetListenerHealthStatus: a stopped or vanished instance
// refuses the connection as a closed port does. The codes are the NLB API
// reference's (https://help.aliyun.com/zh/slb/api-getlistenerhealthstatus-nlb:
// CONNECT_TIMEOUT, CONNECT_FAIL, RECV_TIMEOUT, ...).
var reasonCodes = map[string]string{
	"InstanceGone":       "CONNECT_FAIL",
	"InstanceNotRunning": "CONNECT_TIMEOUT",
	"PortNotListening":   "CONNECT_FAIL",
}

// getListenerHealthStatus reports the servers of a listener's group that
// are not healthy in the emulator's health model: an instance (or an ENI's
// instance) that is gone or not Running, or a check port that does not
// listen (ecs.BackendHealth); a group whose checks are off lists none.
func (s *Service) getListenerHealthStatus(req *api.Request) (map[string]any, error) {
	l, err := api.Lookup(req, "ListenerId", s.listener)
	if err != nil {
		return nil, err
	}
	infos := []map[string]any{}
	if g, err := s.serverGroup(req, l.ServerGroupID); err == nil {
		bad := []map[string]any{}
		for _, sv := range g.Servers {
			if !g.HealthCheck.Enabled {
				break
			}
			status, reason := "", ""
			if sv.status(req.Now) == ServerAdding {
				status = ServerHealthInitial
			} else if sv.Type == "Ecs" || sv.Type == "Eni" || sv.Type == "Eci" {
				port := sv.Port
				if g.HealthCheck.ConnectPort > 0 {
					port = g.HealthCheck.ConnectPort
				}
				if s.ecs != nil {
					if why := s.ecs.BackendHealth(sv.ID, port, req.Now); why != "" {
						status, reason = ServerHealthUnhealthy, reasonCodes[why]
					}
				}
			}
			if status == "" {
				continue
			}
			row := map[string]any{"ServerId": sv.ID, "ServerIp": sv.IP, "Port": sv.Port, "Status": status}
			if reason != "" {
				row["Reason"] = map[string]any{"ReasonCode": reason}
			}
			bad = append(bad, row)
		}
		infos = append(infos, map[string]any{"ServerGroupId": g.ID, "HeathCheckEnabled": g.HealthCheck.Enabled, "NonNormalServers": bad})
	}
	item := map[string]any{
		"ListenerId": l.ID, "ListenerPort": l.Port, "ListenerProtocol": l.Protocol, "ServerGroupInfos": infos,
	}
	return map[string]any{"ListenerHealthStatus": []map[string]any{item}, "TotalCount": 1, "MaxResults": 20, "NextToken": ""}, nil
}
