package gateway_test

import (
	"net/http"
	"testing"
)

func TestUnknownActionIsInvalidApiNotFound(t *testing.T) {
	env := newTestEnv(t, nil)
	_, err := env.call(t, env.client(t, nil), "NoSuchAction", nil)
	se := wantServerError(t, err, "InvalidApi.NotFound", http.StatusNotFound)
	if se.HostId() != "kv.aliyuncs.com" {
		t.Fatalf("HostId %q", se.HostId())
	}
}
