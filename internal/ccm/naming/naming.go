// Package naming holds the names, tags, labels and finalizers the existing
// Alibaba Cloud CCM writes, so our controllers adopt what it created and
// recognise which listeners and server groups they own: anything whose name
// does not parse, or parses but names another Service or cluster, is
// user-managed and never touched.
package naming

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultClusterID is used in names and tags when cloud-config clusterID is
// unset (the existing CCM's literal; equals config.DefaultClusterID).
const DefaultClusterID = "clusterid"

// Objects written on the Service.
const (
	// FinalizerCLB guards CLB cleanup.
	FinalizerCLB = "service.k8s.alibaba/resources"
	// FinalizerNLB guards NLB cleanup.
	FinalizerNLB = "service.k8s.alibaba/nlb"
	// LabelHash holds Hash(svc) of the last successful sync.
	LabelHash = "service.beta.kubernetes.io/hash"
	// LabelLoadBalancerID holds the id of the LB serving the Service.
	LabelLoadBalancerID = "service.k8s.alibaba/loadbalancer-id"
	// LabelBackendsHash holds a hash of the LB id and the backends of the
	// last successful sync, so a restarted CCM can tell a Service whose
	// backends did not move without reading them (a hint, never proof).
	LabelBackendsHash = "service.k8s.alibaba/backends-hash"
	// LabelSecurityGroupID holds the id of the CCM-created NLB security group.
	LabelSecurityGroupID = "service.k8s.alibaba/security-group-id"
)

// Cloud tag keys.
const (
	// TagKeyDefaultName marks an LB (or NLB server group) we created; its
	// value is the default LB name, which finds the LB again after a crash.
	TagKeyDefaultName = "kubernetes.do.not.delete"
	// TagKeyCluster carries the cluster id.
	TagKeyCluster = "ack.aliyun.com"
	// TagKeyReused marks an LB bound through the id annotation.
	TagKeyReused = "kubernetes.reused.by.user"
)

// Tag is a cloud resource tag.
type Tag struct {
	// Key is the tag key.
	Key string
	// Value is the tag value (may be empty).
	Value string
}

// ClusterID returns id, or DefaultClusterID when it is empty.
func ClusterID(id string) string {
	if id == "" {
		return DefaultClusterID
	}
	return id
}

// DefaultLBName is "a" + the Service UID without dashes, cut to 32
// characters: the name (and tag value) the existing CCM gives LBs.
func DefaultLBName(svc *corev1.Service) string {
	name := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return name
}

// DefaultTags are the tags on an LB we create (and on NLB server groups).
func DefaultTags(svc *corev1.Service, clusterID string) []Tag {
	return []Tag{
		{Key: TagKeyDefaultName, Value: DefaultLBName(svc)},
		{Key: TagKeyCluster, Value: ClusterID(clusterID)},
	}
}

// ReusedTag is put on an LB bound through the id annotation.
func ReusedTag() Tag { return Tag{Key: TagKeyReused, Value: "true"} }

// NLBSecurityGroupName is the security group that enforces an NLB
// Service's loadBalancerSourceRanges.
func NLBSecurityGroupName(lbName string) string { return "k8s-nlb-" + lbName }

// Ref identifies a Service within a cluster; it names (and recognises) the
// listeners and server groups of that Service.
type Ref struct {
	// ClusterID is cloud-config clusterID (DefaultClusterID when empty).
	ClusterID string
	// Namespace is the Service namespace.
	Namespace string
	// Name is the Service name.
	Name string
}

// For returns the Ref of a Service.
func For(svc *corev1.Service, clusterID string) Ref {
	return Ref{ClusterID: ClusterID(clusterID), Namespace: svc.Namespace, Name: svc.Name}
}

// CLBListener is a CLB listener Description: k8s/<port>/<svc>/<ns>/<cluster>.
func (r Ref) CLBListener(servicePort int32) string {
	return r.clb(strconv.Itoa(int(servicePort)))
}

// CLBVGroup is a CLB vServer group name; port is the nodePort (ecs
// backends) or the targetPort, number or name (eni backends).
func (r Ref) CLBVGroup(port string) string { return r.clb(port) }

func (r Ref) clb(port string) string {
	return strings.Join([]string{"k8s", port, r.Name, r.Namespace, ClusterID(r.ClusterID)}, "/")
}

// NLBListener is an NLB ListenerDescription:
// k8s.<port>.<PROTO>.<svc>.<ns>.<cluster>.
func (r Ref) NLBListener(servicePort int32, protocol string) string {
	return r.nlb(strconv.Itoa(int(servicePort)), protocol)
}

// NLBListenerRange is the ListenerDescription of a port-range listener.
func (r Ref) NLBListenerRange(start, end int32, protocol string) string {
	return r.nlb(portRange(start, end), protocol)
}

// NLBServerGroup is an NLB server group name; port as for CLBVGroup.
func (r Ref) NLBServerGroup(port, protocol string) string { return r.nlb(port, protocol) }

// NLBServerGroupRange is the name of a server group serving a port range.
func (r Ref) NLBServerGroupRange(start, end int32, protocol string) string {
	return r.nlb(portRange(start, end), protocol)
}

func portRange(start, end int32) string {
	return strconv.Itoa(int(start)) + "_" + strconv.Itoa(int(end))
}

func (r Ref) nlb(port, protocol string) string {
	return strings.Join([]string{"k8s", port, strings.ToUpper(protocol), r.Name, r.Namespace, ClusterID(r.ClusterID)}, ".")
}

// Parsed is a listener or server group name that follows our format.
type Parsed struct {
	Ref
	// Port is the port field: a number, a named port, or start_end (NLB).
	Port string
	// Protocol is TCP, UDP or TCPSSL for NLB names, "" for CLB names.
	Protocol string
}

// PortRange returns the range of a start_end port field.
func (p Parsed) PortRange() (start, end int32, ok bool) {
	a, b, found := strings.Cut(p.Port, "_")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || lo < 1 || hi > 65535 || lo > hi {
		return 0, 0, false
	}
	return int32(lo), int32(hi), true
}

// ParseCLB parses k8s/<port>/<svc>/<ns>/<cluster>.
func ParseCLB(name string) (Parsed, bool) {
	f := strings.SplitN(name, "/", 5)
	if len(f) != 5 || f[0] != "k8s" || !validPort(f[1], false) || !validRef(f[2], f[3], f[4]) {
		return Parsed{}, false
	}
	return Parsed{Ref: Ref{Name: f[2], Namespace: f[3], ClusterID: f[4]}, Port: f[1]}, true
}

// ParseNLB parses k8s.<port>.<PROTO>.<svc>.<ns>.<cluster>.
func ParseNLB(name string) (Parsed, bool) {
	f := strings.SplitN(name, ".", 6)
	if len(f) != 6 || f[0] != "k8s" || !validPort(f[1], true) || !validRef(f[3], f[4], f[5]) {
		return Parsed{}, false
	}
	switch f[2] {
	case "TCP", "UDP", "TCPSSL":
	default:
		return Parsed{}, false
	}
	return Parsed{Ref: Ref{Name: f[3], Namespace: f[4], ClusterID: f[5]}, Port: f[1], Protocol: f[2]}, true
}

// OwnsCLB parses a CLB listener description or vServer group name and
// succeeds only when it belongs to r.
func (r Ref) OwnsCLB(name string) (Parsed, bool) {
	p, ok := ParseCLB(name)
	return p, ok && r.matches(p.Ref)
}

// OwnsNLB parses an NLB listener description or server group name and
// succeeds only when it belongs to r.
func (r Ref) OwnsNLB(name string) (Parsed, bool) {
	p, ok := ParseNLB(name)
	return p, ok && r.matches(p.Ref)
}

func (r Ref) matches(o Ref) bool {
	return o.Name == r.Name && o.Namespace == r.Namespace && o.ClusterID == ClusterID(r.ClusterID)
}

func validRef(name, namespace, cluster string) bool {
	return cluster != "" && len(validation.IsDNS1123Label(name)) == 0 && len(validation.IsDNS1123Label(namespace)) == 0
}

func validPort(s string, allowRange bool) bool {
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 1 && n <= 65535 && strconv.Itoa(n) == s
	}
	if allowRange {
		if _, _, ok := (Parsed{Port: s}).PortRange(); ok {
			return true
		}
	}
	return len(validation.IsValidPortName(s)) == 0
}

// TagKeyManaged records, on a load balancer we created, the keys that
// additional-resource-tags put there, so that a key later dropped from the
// annotation is removed from the load balancer while tags added by other
// means are left alone.
const TagKeyManaged = "kubernetes.managed.tags"

// maxTagValue is the cloud's limit on a tag value.
const maxTagValue = 128

// System reports whether a tag key is one we never remove on behalf of
// additional-resource-tags: our own markers and the cloud's reserved keys.
func System(key string) bool {
	switch key {
	case TagKeyDefaultName, TagKeyCluster, TagKeyReused, TagKeyManaged:
		return true
	}
	return strings.HasPrefix(key, "acs:") || strings.HasPrefix(key, "aliyun")
}

// ManagedRecord is the TagKeyManaged tag for the annotation's tags; ok is
// false when there are none or the key list does not fit a tag value (then
// removals cannot be tracked and none are made).
func ManagedRecord(want []Tag) (Tag, bool) {
	var keys []string
	for _, t := range want {
		if !System(t.Key) {
			keys = append(keys, t.Key)
		}
	}
	if len(keys) == 0 {
		return Tag{}, false
	}
	sort.Strings(keys)
	v := strings.Join(keys, ",")
	if len(v) > maxTagValue {
		return Tag{}, false
	}
	return Tag{Key: TagKeyManaged, Value: v}, true
}

// PlanTags compares a load balancer's tags with the annotation's: set are
// the tags to add or change; remove are the keys the annotation dropped.
// Removals happen only on our own load balancer (not a reused one) and
// only for keys our record shows the annotation put there.
func PlanTags(current map[string]string, want []Tag, own bool) (set []Tag, remove []string) {
	wanted := map[string]bool{}
	for _, t := range want {
		wanted[t.Key] = true
		if v, ok := current[t.Key]; !ok || v != t.Value {
			set = append(set, t)
		}
	}
	if !own {
		return set, nil
	}
	for _, k := range strings.Split(current[TagKeyManaged], ",") {
		if k != "" && !wanted[k] && !System(k) {
			if _, ok := current[k]; ok {
				remove = append(remove, k)
			}
		}
	}
	sort.Strings(remove)
	rec, ok := ManagedRecord(want)
	switch {
	case ok && current[TagKeyManaged] != rec.Value:
		set = append(set, rec)
	case !ok && current[TagKeyManaged] != "":
		remove = append(remove, TagKeyManaged)
	}
	return set, remove
}
