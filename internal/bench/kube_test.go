package bench

import (
	"strings"
	"testing"
)

func TestParseKubeWrites(t *testing.T) {
	const metrics = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 812
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 300
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 180
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PUT"} 1.5e+01
rest_client_request_duration_seconds_count{host="127.0.0.1:6443",method="PATCH"} 999
`
	got, err := parseKubeWrites(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"PATCH": 302, "POST": 180, "PUT": 15}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
}

func TestNearestRank(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{ten, 0.5, 5}, {ten, 0.9, 9}, {ten, 1, 10}, {ten, 0.01, 1},
		{[]float64{3}, 0.5, 3}, {[]float64{1, 2, 3}, 0.5, 2}, {[]float64{1, 2, 3}, 0.9, 3},
	} {
		if got := nearestRank(tc.sorted, tc.p); got != tc.want {
			t.Errorf("nearestRank(%v, %v) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}
