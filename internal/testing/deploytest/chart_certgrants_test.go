package deploytest

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestChartCertificateGrants: the chart's certificateGrants value becomes
// the cloud-config's Global.certificateGrants, read back by the CCM's own
// parser as given (a string, a list, "*"); none by default; a value that
// is neither a string nor a list of them, or a bad certificate id, fails
// helm template naming the value.
func TestChartCertificateGrants(t *testing.T) {
	objs, _ := render(t, "--set", "clusterID=c-certs", "--set-json",
		`certificateGrants={"7001-cn-hangzhou":"team-a,team-b","7002-cn-hangzhou":["team-c"],"7003-cn-hangzhou":"*"}`)
	want := map[string][]string{"7001-cn-hangzhou": {"team-a", "team-b"}, "7002-cn-hangzhou": {"team-c"}, "7003-cn-hangzhou": {"*"}}
	if got := renderedConfig(t, objs).CertificateGrants; !reflect.DeepEqual(got, want) {
		t.Errorf("certificateGrants %v, want %v", got, want)
	}
	objs, _ = render(t, "--set", "clusterID=c-certs")
	if got := renderedConfig(t, objs).CertificateGrants; got != nil {
		t.Errorf("certificateGrants %v by default, want none", got)
	}
	for _, bad := range []string{`certificateGrants={"7001-cn-hangzhou":true}`, `certificateGrants={"bad id":"team-a"}`, `certificateGrants={"7001-cn-hangzhou":[]}`} {
		if _, _, err := renderChart(context.Background(), "--set", "clusterID=c-certs", "--set-json", bad); err == nil || !strings.Contains(err.Error(), "certificateGrants") {
			t.Errorf("%s: error %v, want one naming certificateGrants", bad, err)
		}
	}
}
