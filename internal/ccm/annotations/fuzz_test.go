package annotations_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
)

// fuzzKeys are the keys a fuzzed Service may carry: every registered key,
// under both prefixes.
func fuzzKeys() []string {
	var out []string
	for _, a := range annotations.Registry {
		out = append(out, a.Key)
		if s := a.Suffix(); s != "" {
			out = append(out, annotations.LegacyKey(s))
		}
	}
	return out
}

// FuzzParse gives up to three registered annotations arbitrary values on a
// CLB or NLB Service. Parse must not panic, must answer the same twice,
// must fail only with an *InvalidError whose message fits an event and
// whose problems each name a key the Service carries (or a spec field),
// and must return settings whenever the backends stay usable.
func FuzzParse(f *testing.F) {
	keys := fuzzKeys()
	index := func(key string) byte {
		for i, k := range keys {
			if k == key {
				return byte(i)
			}
		}
		panic(key + " is not registered")
	}
	for _, s := range []struct {
		k1, v1, k2, v2, k3, v3 string
		nlb                    bool
	}{
		{pre + "scheduler", "fastest", pre + "bandwidth", "lots", pre + "spec", "slb.s3.large", false},
		{pre + "protocol-port", "https:443,http:80", pre + "cert-id", "1234_cn-hangzhou", pre + "forward-port", "80:443", false},
		{pre + "id", "lb-abc", pre + "force-override-listeners", "true", pre + "backend-label", "a=b,c=d", false},
		{pre + "zone-maps", "cn-hangzhou-h:vsw-1,cn-hangzhou-i:vsw-2", pre + "address-type", "intranet", pre + "name", "x", true},
		{legacy + "healthy-threshold", "42", pre + "health-check-flag", "on", pre + "health-check-type", "http", false},
		{pre + "additional-resource-tags", "k1=v1,k2,,k1=v3", pre + "weight", "101", pre + "remove-unscheduled-backend", "maybe", false},
		{pre + "acl-status", "on", pre + "acl-id", "", pre + "acl-type", "white", false},
		{pre + "vgroup-port", "rsp-1:80,rsp-2:443", pre + "vswitch-id", "vsw-1", pre + "ip-version", "ipv6", true},
	} {
		f.Add(index(s.k1), s.v1, index(s.k2), s.v2, index(s.k3), s.v3, s.nlb)
	}
	f.Fuzz(func(t *testing.T, k1 byte, v1 string, k2 byte, v2 string, k3 byte, v3 string, nlb bool) {
		ann := map[string]string{}
		for _, kv := range []struct {
			k byte
			v string
		}{{k1, v1}, {k2, v2}, {k3, v3}} {
			ann[keys[int(kv.k)%len(keys)]] = kv.v
		}
		svc := service(ann)
		defaults := annotations.Defaults{Owner: annotations.OwnerCLB}
		if nlb {
			svc = nlbService(ann)
			defaults.Owner = annotations.OwnerNLB
		}
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Parse took over 5s on %q", ann)) })
		defer watchdog.Stop()
		s1, err1 := annotations.Parse(svc, defaults)
		s2, err2 := annotations.Parse(svc.DeepCopy(), defaults)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(s1, s2) {
			t.Fatalf("Parse is not deterministic on %q:\n%v\n%v", ann, err1, err2)
		}
		if err1 == nil {
			if s1 == nil {
				t.Fatalf("no settings and no error on %q", ann)
			}
			return
		}
		var inv *annotations.InvalidError
		if !errors.As(err1, &inv) {
			t.Fatalf("Parse failed with %T, want *InvalidError: %v", err1, err1)
		}
		if len(inv.Problems) == 0 {
			t.Fatalf("an InvalidError without problems on %q", ann)
		}
		if n := len(err1.Error()); n > annotations.MaxMessageBytes {
			t.Fatalf("event message of %d bytes, over %d", n, annotations.MaxMessageBytes)
		}
		if inv.BackendsUsable() && s1 == nil {
			t.Fatalf("backends usable but no settings on %q", ann)
		}
		for _, p := range inv.Problems {
			if _, ok := ann[p.Key]; !ok && !strings.HasPrefix(p.Key, "spec.") && !registered(p.Key) {
				t.Errorf("problem names %q, neither an annotation of the Service nor a spec field: %s", p.Key, p)
			}
			// Each quoted user text is cut at MaxValueChars characters
			// (escaped, at most 10 bytes each), whatever its length.
			bound := len(p.Key) + len(p.Reason) + len(p.Accepted) + 2*(10*annotations.MaxValueChars+64) + 64
			if n := len(p.String()); n > bound {
				t.Errorf("problem text of %d bytes, over %d: %.300s…", n, bound, p.String())
			}
		}
	})
}

func registered(key string) bool {
	for _, k := range fuzzKeys() {
		if k == key {
			return true
		}
	}
	return false
}
