package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
)

// listingProvider is a provider whose cloud is a list of load balancers,
// read by tag listing or one at a time; any other call panics through the
// nil embedded Provider.
type listingProvider struct {
	Provider
	lbs []*LoadBalancer
	err error
	// failFirst listings fail with err; all fail when it is 0.
	failFirst int
	mu        sync.Mutex
	calls     int
	reads     int
	asked     []string
}

func (p *listingProvider) Kind() string { return "TEST" }

func (p *listingProvider) ReuseRules() ReuseRules { return ReuseRules{} }

func (p *listingProvider) Descriptor() Descriptor {
	return Descriptor{Kind: p.Kind(), Reuse: p.ReuseRules()}
}

// Describe and FindTagged read the same cloud one load balancer at a time,
// counted in reads.
func (p *listingProvider) Describe(_ context.Context, id string) (*LoadBalancer, error) {
	p.reads++
	for _, lb := range p.lbs {
		if lb.ID == id {
			return lb, nil
		}
	}
	return nil, nil
}

func (p *listingProvider) FindTagged(_ context.Context, name string) (*LoadBalancer, error) {
	p.reads++
	for _, lb := range p.lbs {
		if lb.Tags[naming.TagKeyDefaultName] == name {
			return lb, nil
		}
	}
	return nil, nil
}

func (p *listingProvider) ListTagged(_ context.Context, key, value string) ([]*LoadBalancer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.asked = append(p.asked, key+"="+value)
	if p.err != nil && (p.failFirst == 0 || p.calls <= p.failFirst) {
		return nil, p.err
	}
	return p.lbs, nil
}

func (p *listingProvider) listings() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// TestConvergedAtStart: the start-up listing proves a Service only when the
// listed load balancer named by its label carries our tags for it and its
// backends are those last applied; one listing serves every Service; the
// label alone never proves anything.
func TestConvergedAtStart(t *testing.T) {
	backends := map[int32][]Target{80: {{InstanceID: "i-1", Port: 30080, Weight: 100}, {InstanceID: "i-2", Port: 30080, Weight: 100}}}
	mk := func(uid, label string, ann map[string]string, hashOf map[int32][]Target) (*corev1.Service, *Request) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-" + uid, Namespace: "default", UID: types.UID(uid), Annotations: map[string]string{}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		for k, v := range ann {
			svc.Annotations[annotations.Key(k)] = v
		}
		svc.Labels = map[string]string{naming.LabelLoadBalancerID: label, naming.LabelBackendsHash: BackendsHash(label, hashOf)}
		s, err := annotations.Parse(svc, annotations.Defaults{Owner: annotations.OwnerCLB})
		if err != nil {
			t.Fatal(err)
		}
		return svc, &Request{Service: svc, Settings: s, ClusterID: "c1", Identity: IdentityOf(svc, "c1"), LoadBalancerID: label, Backends: backends}
	}
	tagsFor := func(uid string) map[string]string {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		return map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(svc), naming.TagKeyCluster: "c1"}
	}
	listing := []*LoadBalancer{
		{ID: "lb-a", Tags: tagsFor("aaaa")},
		{ID: "lb-b", Tags: tagsFor("bbbb")},
		{ID: "lb-x", Tags: map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(&corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "xxxx"}}), naming.TagKeyCluster: "c-other"}},
	}
	for _, tc := range []struct {
		name, uid, label string
		ann              map[string]string
		hashOf           map[int32][]Target
		want             bool
	}{
		{"own, backends unchanged", "aaaa", "lb-a", nil, backends, true},
		{"label names another Service's load balancer", "aaaa", "lb-b", nil, backends, false},
		{"label names a load balancer the listing does not show", "aaaa", "lb-old", nil, backends, false},
		{"tagged for the Service by another cluster", "xxxx", "lb-x", nil, backends, false},
		{"backends moved", "aaaa", "lb-a", nil, map[int32][]Target{80: {{InstanceID: "i-1", Port: 30080, Weight: 100}}}, false},
		{"label recorded no backends", "bbbb", "lb-b", nil, nil, false},
		{"borrowed through the id annotation", "aaaa", "lb-a", map[string]string{"id": "lb-a"}, backends, false},
		{"EIP status", "aaaa", "lb-a", map[string]string{"external-ip-type": "eip"}, backends, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &listingProvider{lbs: listing}
			c := &Controller{opts: Options{ClusterID: "c1"}}
			svc, req := mk(tc.uid, tc.label, tc.ann, tc.hashOf)
			if got := c.convergedAtStart(context.Background(), p, svc, req); got != tc.want {
				t.Fatalf("convergedAtStart = %v, want %v", got, tc.want)
			}
			v, proven := c.proven.Load(svc.UID)
			if proven != tc.want || (proven && v.(string) != tc.label) {
				t.Errorf("proven cache holds %v, %v; want it only when skipped", v, proven)
			}
			if tc.want && (p.calls != 1 || p.asked[0] != naming.TagKeyCluster+"=c1") {
				t.Errorf("listing calls %d, asked %v; want one for the cluster tag", p.calls, p.asked)
			}
			// Once proven in this process, later passes read as before.
			if tc.want && c.convergedAtStart(context.Background(), p, svc, req) {
				t.Errorf("a second pass skipped too")
			}
		})
	}

	t.Run("one listing for every Service, none after the window", func(t *testing.T) {
		p := &listingProvider{lbs: listing}
		c := &Controller{opts: Options{ClusterID: "c1"}}
		for _, uid := range []string{"aaaa", "bbbb"} {
			svc, req := mk(uid, "lb-"+uid[:1], nil, backends)
			if !c.convergedAtStart(context.Background(), p, svc, req) {
				t.Fatalf("%s not proven by the listing", uid)
			}
		}
		if p.calls != 1 {
			t.Errorf("%d listings for two Services, want 1", p.calls)
		}
		v, _ := c.listings.Load(p.Kind())
		v.(*startupListing).at = time.Now().Add(-StartupProofWindow - time.Second)
		c.proven.Clear()
		svc, req := mk("aaaa", "lb-a", nil, backends)
		if c.convergedAtStart(context.Background(), p, svc, req) || p.calls != 1 {
			t.Errorf("proved after the window (listings %d)", p.calls)
		}
	})

	t.Run("a failed listing is retried in the background and proves nothing meanwhile", func(t *testing.T) {
		defer func(r time.Duration) { listingRetry = r }(listingRetry)
		listingRetry = 50 * time.Millisecond
		p := &listingProvider{lbs: listing, err: errors.New("throttled"), failFirst: 2}
		c := &Controller{opts: Options{ClusterID: "c1"}}
		svc, req := mk("aaaa", "lb-a", nil, backends)
		if c.convergedAtStart(context.Background(), p, svc, req) {
			t.Fatal("proved without a listing")
		}
		deadline := time.Now().Add(5 * time.Second)
		for !c.convergedAtStart(context.Background(), p, svc, req) {
			if time.Now().After(deadline) {
				t.Fatalf("not proven after the retries (%d listings)", p.listings())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n := p.listings(); n != 3 {
			t.Errorf("%d listings, want 3 (two failed)", n)
		}
	})

	t.Run("the listing outlives the caller that started it", func(t *testing.T) {
		p := &listingProvider{lbs: listing}
		c := &Controller{opts: Options{ClusterID: "c1"}}
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		svc, req := mk("aaaa", "lb-a", nil, backends)
		c.convergedAtStart(gone, p, svc, req) // its sync is over: no answer
		c.proven.Clear()
		other, oreq := mk("bbbb", "lb-b", nil, backends)
		if !c.convergedAtStart(context.Background(), p, other, oreq) {
			t.Fatal("the listing started by an ended sync proved nothing for the next one")
		}
		if n := p.listings(); n != 1 {
			t.Errorf("%d listings, want 1", n)
		}
	})
}

// TestBackendsHash: the order of targets does not matter; the load
// balancer, a port, an instance, a weight or a backend port does.
func TestBackendsHash(t *testing.T) {
	base := map[int32][]Target{80: {{InstanceID: "i-1", Port: 30080, Weight: 100}, {InstanceID: "i-2", Port: 30080, Weight: 50}}, 443: {{IP: "10.0.0.5", Port: 8443, Weight: 100}}}
	h := BackendsHash("lb-1", base)
	if len(h) != 56 {
		t.Fatalf("hash %q is %d characters, want 56", h, len(h))
	}
	for _, tc := range []struct {
		name string
		lb   string
		b    map[int32][]Target
		same bool
	}{
		{"reordered, node names differ", "lb-1", map[int32][]Target{443: {{IP: "10.0.0.5", Port: 8443, Weight: 100, NodeName: "n"}}, 80: {{InstanceID: "i-2", Port: 30080, Weight: 50}, {InstanceID: "i-1", Port: 30080, Weight: 100}}}, true},
		{"other load balancer", "lb-2", base, false},
		{"weight", "lb-1", map[int32][]Target{80: {{InstanceID: "i-1", Port: 30080, Weight: 100}, {InstanceID: "i-2", Port: 30080, Weight: 100}}, 443: base[443]}, false},
		{"instance gone", "lb-1", map[int32][]Target{80: {{InstanceID: "i-1", Port: 30080, Weight: 100}}, 443: base[443]}, false},
		{"backend port", "lb-1", map[int32][]Target{80: base[80], 443: {{IP: "10.0.0.5", Port: 9443, Weight: 100}}}, false},
		{"port gone", "lb-1", map[int32][]Target{80: base[80]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BackendsHash(tc.lb, tc.b) == h; got != tc.same {
				t.Errorf("same hash = %v, want %v", got, tc.same)
			}
		})
	}
}

// TestProveFromStartupListing: a Service whose backends moved while the
// CCM was down is still proven by the listing, without a read of its load
// balancer; another Service whose label names that load balancer is not
// proven by it, and the reads of Bind find it is not its own.
func TestProveFromStartupListing(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "cccc"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	s, err := annotations.Parse(svc, annotations.Defaults{Owner: annotations.OwnerCLB})
	if err != nil {
		t.Fatal(err)
	}
	own := &LoadBalancer{ID: "lb-c", Tags: map[string]string{naming.TagKeyDefaultName: naming.DefaultLBName(svc), naming.TagKeyCluster: "c1"}}
	p := &listingProvider{lbs: []*LoadBalancer{own}}
	events := record.NewFakeRecorder(10)
	c := &Controller{opts: Options{ClusterID: "c1"}, recorder: events}
	req := &Request{Service: svc, Settings: s, ClusterID: "c1", Identity: IdentityOf(svc, "c1"), LoadBalancerID: "lb-c"}
	b, err := c.prove(context.Background(), p, svc, req)
	if err != nil || b.ID() != "lb-c" || b.Own(req) == nil {
		t.Fatalf("prove = %+v, %v; want lb-c, owned", b, err)
	}
	if v, _ := c.proven.Load(svc.UID); v != "lb-c" {
		t.Errorf("proven cache holds %v", v)
	}
	if p.calls != 1 || p.reads != 0 {
		t.Errorf("%d listings and %d reads, want 1 and 0", p.calls, p.reads)
	}
	other := svc.DeepCopy()
	other.UID = "dddd"
	b, err = c.prove(context.Background(), p, other, &Request{Service: other, Settings: s, ClusterID: "c1", Identity: IdentityOf(other, "c1"), LoadBalancerID: "lb-c"})
	if err != nil || b != nil {
		t.Fatalf("another Service's label proved %+v, %v", b, err)
	}
	if _, ok := c.proven.Load(other.UID); ok {
		t.Error("another Service was cached as proven")
	}
	if p.calls != 1 || p.reads != 2 {
		t.Errorf("%d listings and %d reads, want 1 and Bind's 2", p.calls, p.reads)
	}
	select {
	case e := <-events.Events:
		if !strings.Contains(e, EventNotOwned) {
			t.Errorf("event %q, want %s", e, EventNotOwned)
		}
	default:
		t.Errorf("no %s Warning for the foreign label", EventNotOwned)
	}
}
