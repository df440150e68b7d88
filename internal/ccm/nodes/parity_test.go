package nodes

import (
	"context"
	"errors"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudapi "k8s.io/cloud-provider/api"
)

type fakeIDLookup struct {
	mu    sync.Mutex
	calls int
	found map[string]*Instance
}

func (f *fakeIDLookup) InstanceByID(_ context.Context, region, id string) (*Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.found[id], nil
}

// TestProviderIDMissConfirmedByIDAcrossVPCs: a Node whose instance the
// VPC listing lacks exists when the id lookup (no VPC filter) finds it,
// and only then; hits are cached, misses are not.
func TestProviderIDMissConfirmedByIDAcrossVPCs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		providerID string
		found      map[string]*Instance
		exists     bool
		lookups    int // after three InstanceExists calls
	}{
		{"in another VPC", "cn-hangzhou.i-other", map[string]*Instance{"i-other": {ID: "i-other", VpcID: "vpc-2", Status: "Running"}}, true, 1},
		{"gone", "cn-hangzhou.i-gone", nil, false, 3},
		{"in the cluster VPC: no id lookup", "cn-hangzhou.i-local", nil, true, 0},
		{"segmented providerID", "alicloud://cn-hangzhou-h/cn-hangzhou.i-other", map[string]*Instance{"i-other": {ID: "i-other", VpcID: "vpc-2"}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := &fakeIDLookup{found: tc.found}
			s := NewInstances(NewIndex(&fakeLister{list: []Instance{{ID: "i-local"}}}, "vpc-1"), "cn-hangzhou", ids)
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{ProviderID: tc.providerID}}
			for i := 0; i < 3; i++ {
				ok, err := s.InstanceExists(context.Background(), n)
				if err != nil || ok != tc.exists {
					t.Fatalf("InstanceExists = %v, %v; want %v", ok, err, tc.exists)
				}
			}
			if ids.calls != tc.lookups {
				t.Fatalf("%d id lookups, want %d", ids.calls, tc.lookups)
			}
		})
	}
}

type fakeENIs struct {
	on       map[string]bool
	err      error
	describe int
	modify   int
}

func (f *fakeENIs) SourceDestCheck(_ context.Context, eni string) (bool, error) {
	f.describe++
	return f.on[eni], nil
}

func (f *fakeENIs) DisableSourceDestCheck(_ context.Context, eni string) error {
	f.modify++
	if f.err != nil {
		return f.err
	}
	f.on[eni] = false
	return nil
}

// TestInitializationDisablesSourceDestCheck: the primary ENI's check is
// read, and written only when on; a failed write fails the lookup (the
// taint stays); a Node already initialized is not touched.
func TestInitializationDisablesSourceDestCheck(t *testing.T) {
	tainted := []v1.Taint{{Key: cloudapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name             string
		on               bool
		err              error
		taints           []v1.Taint
		wantErr          bool
		describe, modify int
	}{
		{"on: turned off", true, nil, tainted, false, 1, 1},
		{"off: left alone", false, nil, tainted, false, 1, 0},
		{"write refused: lookup fails", true, errors.New("Forbidden.RAM"), tainted, true, 1, 1},
		{"initialized Node: not read", true, nil, nil, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enis := &fakeENIs{on: map[string]bool{"eni-1": tc.on}, err: tc.err}
			s := NewInstances(NewIndex(&fakeLister{list: []Instance{{ID: "i-1", PrimaryENI: "eni-1"}}}, "vpc-1"), "cn-hangzhou", nil)
			s.SetInit(InitOptions{ENIs: enis})
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{ProviderID: "cn-hangzhou.i-1", Taints: tc.taints}}
			_, err := s.InstanceMetadata(context.Background(), n)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				// A retried initialization does not read the ENI again.
				if _, err := s.InstanceMetadata(context.Background(), n); err != nil {
					t.Fatal(err)
				}
			}
			if enis.describe != tc.describe || enis.modify != tc.modify {
				t.Fatalf("%d reads, %d writes; want %d, %d", enis.describe, enis.modify, tc.describe, tc.modify)
			}
		})
	}
}

// TestLabelChanges: only labels that differ from the instance are
// patched; GA and beta keys both; labels the instance does not imply are
// kept.
func TestLabelChanges(t *testing.T) {
	in := &Instance{ID: "i-1", Type: "ecs.g7.large", Zone: "cn-hangzhou-h", ChargeType: "PrePaid", SpotStrategy: "NoSpot",
		Tags: map[string]string{TagNodePoolID: "np-1"}}
	all := map[string]string{
		v1.LabelInstanceTypeStable: "ecs.g7.large", v1.LabelInstanceType: "ecs.g7.large",
		v1.LabelTopologyZone: "cn-hangzhou-h", v1.LabelFailureDomainBetaZone: "cn-hangzhou-h",
		v1.LabelTopologyRegion: "cn-hangzhou", v1.LabelFailureDomainBetaRegion: "cn-hangzhou",
		LabelChargeType: "PrePaid", LabelSpotStrategy: "NoSpot", LabelNodePoolID: "np-1",
	}
	with := func(kv ...string) map[string]string {
		out := map[string]string{"user": "keep"}
		for k, v := range all {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(out, kv[i])
			} else {
				out[kv[i]] = kv[i+1]
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{"in sync", with(), map[string]string{}},
		{"converted to PrePaid", with(LabelChargeType, "PostPaid"), map[string]string{LabelChargeType: "PrePaid"}},
		{"node pool tag set later", with(LabelNodePoolID, ""), map[string]string{LabelNodePoolID: "np-1"}},
		{"instance type changed", with(v1.LabelInstanceTypeStable, "ecs.g6.large", v1.LabelInstanceType, "ecs.g6.large"),
			map[string]string{v1.LabelInstanceTypeStable: "ecs.g7.large", v1.LabelInstanceType: "ecs.g7.large"}},
		{"no labels", nil, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
			got := labelChanges(n, wantLabels(in, "cn-hangzhou"))
			if len(got) != len(tc.want) {
				t.Fatalf("changes %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("changes %v, want %v", got, tc.want)
				}
			}
		})
	}
}
