package localcluster

import "testing"

func TestClientName(t *testing.T) {
	for _, tc := range []struct{ agent, want string }{
		{"cloud-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/cloud-node-controller", "cloud-node-controller"},
		{"cloud-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format", ""},
		{"kwok/v0.7.0 (linux/amd64) kubernetes/abc", ""},
		{"curl/8.0", ""},
	} {
		if got := clientName(tc.agent); got != tc.want {
			t.Errorf("clientName(%q) = %q, want %q", tc.agent, got, tc.want)
		}
	}
}
