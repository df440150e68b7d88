package annotations

import (
	"fmt"
	"net"
	"strings"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"k8s.io/apimachinery/pkg/util/validation"
)

func (r *reader) loadBalancer(s *Settings) {
	lb := &s.LoadBalancer
	idPrefix := "lb-"
	if r.owner == OwnerNLB {
		idPrefix = "nlb-"
	}
	if id := r.idWithPrefix("id", idPrefix); id != nil {
		lb.ID = *id
	}
	lb.ForceOverrideListeners = r.trueFalse("force-override-listeners")
	if a, key, v, ok := r.raw("name"); ok {
		if (r.owner == OwnerCLB && !validCLBName(v)) || (r.owner == OwnerNLB && !validNLBName(v)) {
			r.failA(a, key, v)
		} else {
			lb.Name = &v
		}
	}
	lb.AddressType = r.enum("address-type")
	lb.ResourceGroupID = r.idWithPrefix("resource-group-id", "rg-")
	lb.AdditionalTags = r.tags()
	lb.IPVersion = r.enum("ip-version")
	lb.PreserveOnDelete = r.present("preserve-lb-on-delete")

	if r.owner == OwnerCLB {
		lb.Spec = r.enum("spec")
		lb.InstanceChargeType = r.enum("instance-charge-type")
		lb.ChargeType = r.enum("charge-type")
		lb.Bandwidth = r.intv("bandwidth")
		lb.NetworkType = r.enum("network-type")
		lb.VSwitchID = r.idWithPrefix("vswitch-id", "vsw-")
		lb.MasterZoneID = r.str("master-zoneid")
		lb.SlaveZoneID = r.str("slave-zoneid")
		lb.IP = r.strIf("ip", func(v string) bool { return net.ParseIP(v) != nil })
		lb.DeleteProtection = r.onOff("delete-protection")
		lb.ModificationProtection = r.enum("modification-protection")
		lb.ExternalIPType = r.enum("external-ip-type")
		lb.Hostname = r.strIf("hostname", func(v string) bool { return len(validation.IsDNS1123Subdomain(v)) == 0 })
		return
	}
	lb.ZoneMaps = r.zoneMaps()
	if ids, ok := r.idList("security-group-ids", "sg-"); ok {
		lb.SecurityGroupIDs, lb.SecurityGroupIDsSet = ids, true
	}
	lb.BandwidthPackageID = r.idWithPrefix("bandwidth-package-id", "cbwp-")
	lb.IPv6AddressType = r.enum("ipv6-address-type")
	lb.CrossZoneEnabled = r.onOff("cross-zone-enabled")
}

// tags parses k1=v1,k2=v2,k3 with the cloud's tag rules.
func (r *reader) tags() []Tag {
	out, l, ok := uniqueList(r, "additional-resource-tags", "key", func(e element) (string, Tag, string) {
		k, val, _ := strings.Cut(e.text, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		lk := strings.ToLower(k)
		why := ""
		switch {
		case k == "":
			why = "a tag key is required"
		case len([]rune(k)) > tagKeyMax:
			why = fmt.Sprintf("the key is longer than %d characters", tagKeyMax)
		case len([]rune(val)) > tagValueMax:
			why = fmt.Sprintf("the value is longer than %d characters", tagValueMax)
		case strings.HasPrefix(lk, "aliyun") || strings.HasPrefix(lk, "acs:"):
			why = "the key starts with aliyun or acs:, which the cloud reserves"
		case k == naming.TagKeyDefaultName || k == naming.TagKeyCluster:
			why = "the controller sets the " + k + " tag itself"
		case strings.Contains(lk, "http://") || strings.Contains(lk, "https://"):
			why = "the key contains http:// or https://"
		}
		return k, Tag{Key: k, Value: val}, why
	})
	if ok && len(out) > 20 {
		r.failWhy(l.a, l.key, l.v, fmt.Sprintf("%d tags, more than 20", len(out)))
		return nil
	}
	return out
}

// zoneMaps parses zone:vsw[:ipv4[:eipAllocId]],... (2–10 distinct zones).
func (r *reader) zoneMaps() []ZoneMapping {
	// A repeated zone is refused before the vSwitch and address rules, so
	// the repeat check is here, not uniqueElements'.
	seen := map[string]int{}
	out, l, ok := uniqueList(r, "zone-maps", "", func(e element) (string, ZoneMapping, string) {
		f := strings.Split(e.text, ":")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		why := ""
		switch {
		case len(f) < 2:
			why = "a vSwitch is required after the zone"
		case len(f) > 4:
			why = "more than 4 ':'-separated fields"
		case f[0] == "":
			why = "a zone is required"
		case seen[f[0]] > 0:
			why = repeats("zone", seen[f[0]])
		case !validID(f[1], "vsw-"):
			why = "the vSwitch id " + idProblem(f[1], "vsw-")
		case len(f) > 2 && f[2] != "" && (net.ParseIP(f[2]) == nil || net.ParseIP(f[2]).To4() == nil):
			why = "the address is not an IPv4 address"
		case len(f) > 3 && f[3] != "" && !validID(f[3], "eip-"):
			why = "the EIP allocation id " + idProblem(f[3], "eip-")
		}
		if why != "" {
			return "", ZoneMapping{}, why
		}
		m := ZoneMapping{ZoneID: f[0], VSwitchID: f[1]}
		if len(f) > 2 {
			m.IPv4Address = f[2]
		}
		if len(f) > 3 {
			m.AllocationID = f[3]
		}
		seen[f[0]] = e.n
		return f[0], m, ""
	})
	if !ok {
		return nil
	}
	if zones := cloudFact("nlb:ZoneMappings"); len(out) < zones.Min || len(out) > zones.Max {
		r.failWhy(l.a, l.key, l.v, fmt.Sprintf("%d zones given", len(out)))
		return nil
	}
	return out
}
