package service

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// BenchmarkSliceCacheBytes measures what the EndpointSlice cache holds per
// endpoint: 5,000 slices shaped as the benchmark's W4 writes them
// (internal/bench w4Slice: 10 IPv4 endpoints each, pods named after their
// Service, Nodes round robin over 1,000, one port) with what the API
// server adds (name, UID, resourceVersion, creation time; pod UIDs as it
// generates them), decoded from JSON as an informer's watch would, then
// transformed with compactSliceTransform; the decoded slices are dropped
// and the heap after a GC is compared with the heap before decoding.
//
//	go test -short -run '^$' -bench SliceCacheBytes ./internal/ccm/service/
func BenchmarkSliceCacheBytes(b *testing.B) {
	const slices, per, nodes = 5000, 10, 1000
	wire := make([][]byte, slices)
	for i := range wire {
		sl := benchWireSlice(i, per, nodes)
		var err error
		if wire[i], err = json.Marshal(sl); err != nil {
			b.Fatal(err)
		}
	}
	var perEndpoint float64
	for b.Loop() {
		cache := make([]any, slices)
		before := heapAfterGC()
		decoded := make([]*discoveryv1.EndpointSlice, slices)
		for i, w := range wire {
			decoded[i] = &discoveryv1.EndpointSlice{}
			if err := json.Unmarshal(w, decoded[i]); err != nil {
				b.Fatal(err)
			}
		}
		for i, d := range decoded {
			var err error
			if cache[i], err = compactSliceTransform(d); err != nil {
				b.Fatal(err)
			}
		}
		decoded = nil
		after := heapAfterGC()
		perEndpoint = float64(int64(after)-int64(before)) / (slices * per)
		// What was measured is what the cache holds: every slice is
		// transformed and still reachable here.
		for i := range cache {
			if sl := sliceOf(cache[i]); sl == nil || len(sl.endpoints) != per {
				b.Fatalf("slice %d not cached whole: %+v", i, cache[i])
			}
		}
		runtime.KeepAlive(cache)
		runtime.KeepAlive(decoded)
	}
	b.ReportMetric(perEndpoint, "B/endpoint")
}

// heapAfterGC is the live heap once the garbage is collected.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchWireSlice is W4's slice i as the API server returns it.
func benchWireSlice(i, per, nodes int) *discoveryv1.EndpointSlice {
	svc := fmt.Sprintf("w4-%04d", i)
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc + "-eps", Namespace: "default", UID: types.UID(randomUUID()),
			ResourceVersion: fmt.Sprint(100000 + i), Generation: 1,
			CreationTimestamp: metav1.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC),
			Labels: map[string]string{
				discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "bench.alicloud-ccm.io",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p80"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	zones := []string{"cn-hangzhou-h", "cn-hangzhou-i"}
	for j := range per {
		k := i*per + j
		node := 1 + k%nodes
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+(k>>16)&15, (k>>8)&255, k&255)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%04d", node)),
			Zone:       ptr.To(zones[node%len(zones)]),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("%s-%d", svc, j),
				UID: types.UID(randomUUID())},
		})
	}
	return sl
}

// randomUUID is a version 4 UUID in the API server's form (lowercase,
// hyphenated).
func randomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
