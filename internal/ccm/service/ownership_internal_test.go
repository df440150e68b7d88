package service

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// fakeFinder is an in-memory cloud for the ownership rules.
type fakeFinder map[string]*LoadBalancer

func (f fakeFinder) Describe(_ context.Context, id string) (*LoadBalancer, error) { return f[id], nil }

func (f fakeFinder) FindTagged(_ context.Context, name string) (*LoadBalancer, error) {
	for _, lb := range f {
		if lb.Tags[naming.TagKeyDefaultName] == name {
			return lb, nil
		}
	}
	return nil, nil
}

func TestBind(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1111-2222"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	mine := naming.DefaultLBName(svc)
	cloud := fakeFinder{
		"lb-own":     {ID: "lb-own", Tags: map[string]string{naming.TagKeyDefaultName: mine, naming.TagKeyCluster: "c1"}},
		"lb-old":     {ID: "lb-old", Tags: map[string]string{naming.TagKeyDefaultName: mine}},
		"lb-victim":  {ID: "lb-victim", Tags: map[string]string{naming.TagKeyDefaultName: "aother", naming.TagKeyCluster: "c1"}},
		"lb-user":    {ID: "lb-user", Tags: map[string]string{}, AddressType: "internet", Addresses: []string{"1.2.3.4"}},
		"lb-api":     {ID: "lb-api", Tags: map[string]string{naming.TagKeyCluster: "c1"}},
		"lb-vpc":     {ID: "lb-vpc", Tags: map[string]string{}, VpcID: "vpc-other"},
		"lb-reused":  {ID: "lb-reused", Tags: map[string]string{naming.TagKeyReused: "true"}},
		"lb-rg":      {ID: "lb-rg", Tags: map[string]string{}, ResourceGroupID: "rg-a"},
		"lb-otherip": {ID: "lb-otherip", Tags: map[string]string{}, Addresses: []string{"5.6.7.8"}},
	}
	withOwn := func(f fakeFinder, own string) fakeFinder {
		out := fakeFinder{}
		for k, v := range f {
			if v.Tags[naming.TagKeyDefaultName] != mine || k == own {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		cloud   fakeFinder
		label   string
		ann     map[string]string
		ingress string
		want    string // bound id, "" none
		reused  bool
		refused bool
		warned  bool
	}{
		{"no label, tag finds own", withOwn(cloud, "lb-own"), "", nil, "", "lb-own", false, false, false},
		{"label is own", withOwn(cloud, "lb-own"), "lb-own", nil, "", "lb-own", false, false, false},
		{"older CCM without cluster tag", withOwn(cloud, "lb-old"), "", nil, "", "lb-old", false, false, false},
		{"label names a victim: ignored", withOwn(cloud, ""), "lb-victim", nil, "", "", false, false, true},
		{"label names a victim, own exists", withOwn(cloud, "lb-own"), "lb-victim", nil, "", "lb-own", false, false, true},
		{"label of a vanished LB", withOwn(cloud, ""), "lb-gone", nil, "", "", false, false, false},
		{"own tagged for another cluster", fakeFinder{"x": {ID: "x", Tags: map[string]string{naming.TagKeyDefaultName: mine, naming.TagKeyCluster: "c2"}}}, "", nil, "", "", false, true, false},
		{"reuse user LB", withOwn(cloud, ""), "", map[string]string{"id": "lb-user"}, "", "lb-user", true, false, false},
		{"reuse established", withOwn(cloud, ""), "lb-user", map[string]string{"id": "lb-user"}, "1.2.3.4", "lb-user", true, false, false},
		{"reuse another Service's", withOwn(cloud, ""), "", map[string]string{"id": "lb-victim"}, "", "", false, true, false},
		{"reuse own created", withOwn(cloud, "lb-own"), "lb-own", map[string]string{"id": "lb-own"}, "", "", false, true, false},
		{"reuse API server LB", withOwn(cloud, ""), "", map[string]string{"id": "lb-api"}, "", "", false, true, false},
		{"reuse other VPC", withOwn(cloud, ""), "", map[string]string{"id": "lb-vpc"}, "", "", false, true, false},
		{"reuse address type", withOwn(cloud, ""), "", map[string]string{"id": "lb-user", "address-type": "intranet"}, "", "", false, true, false},
		{"reuse resource group", withOwn(cloud, ""), "", map[string]string{"id": "lb-rg", "resource-group-id": "rg-b"}, "", "", false, true, false},
		{"reuse when already published elsewhere", withOwn(cloud, ""), "", map[string]string{"id": "lb-otherip"}, "1.2.3.4", "", false, true, false},
		{"add id on a Service with its own LB", withOwn(cloud, "lb-own"), "lb-own", map[string]string{"id": "lb-user"}, "", "", false, true, false},
		{"own LB found by tag though label lost", withOwn(cloud, "lb-own"), "", map[string]string{"id": "lb-user"}, "", "", false, true, false},
		{"re-point a reuse", withOwn(cloud, ""), "lb-reused", map[string]string{"id": "lb-user"}, "", "", false, true, false},
		{"forged label on a reuse: ignored", withOwn(cloud, ""), "lb-rg", map[string]string{"id": "lb-user"}, "", "lb-user", true, false, true},
		{"reuse of a missing LB", withOwn(cloud, ""), "", map[string]string{"id": "lb-missing"}, "", "", false, false, false},
		{"id removed from a borrowing Service", withOwn(cloud, ""), "lb-reused", nil, "", "", false, true, false},
		{"id removed, borrowed LB gone since", withOwn(cloud, ""), "lb-vanished", nil, "", "", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc.DeepCopy()
			s.Annotations = map[string]string{}
			for k, v := range tc.ann {
				s.Annotations[annotations.Key(k)] = v
			}
			if tc.ingress != "" {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: tc.ingress}}
			}
			settings, err := annotations.Parse(s, annotations.Defaults{Owner: annotations.OwnerCLB})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Service: s, Settings: settings, ClusterID: "c1", Identity: IdentityOf(s, "c1"), LoadBalancerID: tc.label}
			b, warnings, err := Bind(context.Background(), tc.cloud, ReuseRules{VpcID: "vpc-cluster"}, req)
			if IsRefused(err) != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", IsRefused(err), err, tc.refused)
			}
			if tc.refused {
				return
			}
			if tc.ann["id"] == "lb-missing" {
				if err == nil {
					t.Fatal("binding a missing reused LB succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.ID() != tc.want || b.Reused != tc.reused || (len(warnings) > 0) != tc.warned {
				t.Fatalf("bound %q reused %v warnings %v; want %q %v warned %v", b.ID(), b.Reused, warnings, tc.want, tc.reused, tc.warned)
			}
			if b.Reused && b.Own(req) != nil {
				t.Fatal("a borrowed load balancer counts as own")
			}
		})
	}
}

func TestCreateToken(t *testing.T) {
	a := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	b := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	t1 := CreateToken(a, "", "p")
	if t1 != CreateToken(a, "", "p") {
		t.Fatal("token not stable for the same Service and parameters")
	}
	for _, other := range []string{CreateToken(b, "", "p"), CreateToken(a, "lb-1", "p"), CreateToken(a, "", "q")} {
		if other == t1 {
			t.Fatal("token does not depend on UID, previous LB and parameters")
		}
	}
	if len(t1) > 64 {
		t.Fatalf("token %q longer than the cloud's 64", t1)
	}
}

// TestCreateIdempotentReplayOfDeleted: the first create replays a token
// whose load balancer no longer exists, so the first use of it fails as
// gone; the second create takes a token derived from the vanished id and
// its load balancer is used. Creates are not read back.
func TestCreateIdempotentReplayOfDeleted(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	errGone := errors.New("gone")
	var tokens, used []string
	res, err := CreateIdempotent(context.Background(), svc, "", "p", func(token string) (string, string, error) {
		tokens = append(tokens, token)
		if len(tokens) == 1 {
			return "lb-deleted", "lb-deleted", nil
		}
		return "lb-new", "lb-new", nil
	}, func(id string) (*Result, error) {
		used = append(used, id)
		if id == "lb-deleted" {
			return nil, fmt.Errorf("create group on %s: %w", id, errGone)
		}
		return &Result{LoadBalancerID: id}, nil
	}, func(err error) bool { return errors.Is(err, errGone) })
	if err != nil || res.LoadBalancerID != "lb-new" {
		t.Fatalf("got %v, %v", res, err)
	}
	if len(tokens) != 2 || tokens[0] == tokens[1] || tokens[1] != CreateToken(svc, "lb-deleted", "p") {
		t.Fatalf("tokens %v", tokens)
	}
	if len(used) != 2 {
		t.Fatalf("used %v", used)
	}
}

// TestCreateIdempotentOtherErrors: an error use does not call gone ends the
// sync after one create; a create error is returned as it is.
func TestCreateIdempotentOtherErrors(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	creates := 0
	boom := errors.New("boom")
	_, err := CreateIdempotent(context.Background(), svc, "", "p", func(string) (string, string, error) {
		creates++
		return "lb-1", "lb-1", nil
	}, func(string) (*Result, error) { return nil, boom }, func(error) bool { return false })
	if !errors.Is(err, boom) || creates != 1 {
		t.Fatalf("err %v after %d creates", err, creates)
	}
	_, err = CreateIdempotent(context.Background(), svc, "", "p", func(string) (string, string, error) {
		return "", "", boom
	}, func(string) (*Result, error) { t.Fatal("used after a failed create"); return nil, nil }, func(error) bool { return true })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	// A cloud that keeps replaying vanished load balancers ends in a retry.
	_, err = CreateIdempotent(context.Background(), svc, "", "p", func(token string) (string, string, error) {
		return token, token, nil
	}, func(string) (*Result, error) { return nil, boom }, func(error) bool { return true })
	var retry *RetryError
	if !errors.As(err, &retry) {
		t.Fatalf("err %v, want a RetryError", err)
	}
}
