package service_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
)

// TestCloudErrorEventAndMetrics: a create refused by the cloud gives a
// SyncLoadBalancerFailed event carrying the cloud's code and message and a
// Fail count; the per-Service backoff retries it and it succeeds.
func TestCloudErrorEventAndMetrics(t *testing.T) {
	rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Count: 1,
		Error: &gateway.FaultError{Code: "QuotaExceeded.LoadBalancersNum", Status: 400, Message: "The quota of LoadBalancersNum is exceeded."}})
	if err != nil {
		t.Fatal(err)
	}
	defer cloud.Gateway.RemoveFault(rule.ID)
	name := "cloud-error"
	createService(t, svcSpec{name: name, ports: []int32{80}})
	ev := waitEvent(t, name, "SyncLoadBalancerFailed", "QuotaExceeded.LoadBalancersNum")
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	t.Logf("event: %s", ev.Message)
	waitIngress(t, name, 30*time.Second)
	body := metrics(t)
	for _, status := range []string{"Fail", "Success"} {
		re := regexp.MustCompile(`ccm_slb_operation_result\{status="` + status + `",type="CLBType",verb="Creation"\} (\d+)`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("no %s count for CLB creations", status)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n < 1 {
			t.Errorf("%s count %d", status, n)
		}
	}
	if !regexp.MustCompile(`ccm_slb_latencies_duration_milliseconds_count\{type="CLBType",verb="Creation"\} [1-9]`).MatchString(body) {
		t.Error("no creation latency observed")
	}
	deleteService(t, name)
}

// metrics reads the CCM's /metrics with a token allowed to.
func metrics(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	cs := kube(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "svc-metrics-reader", Namespace: ns}}
	_, _ = cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "svc-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	_, _ = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}},
	}
	_, _ = cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second} // self-signed serving cert
	var body string
	poll(t, 20*time.Second, "/metrics", func(context.Context) (bool, error) {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", ccm.Port), nil)
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return true, nil
	})
	return body
}

// TestEventsAggregateAndWaitingIsNormal: the same cloud failure repeated is
// one SyncLoadBalancerFailed event whose count grows (its message carries no
// per-call RequestId), and a cloud that is only busy gives a Normal event,
// never SyncLoadBalancerFailed.
func TestEventsAggregateAndWaitingIsNormal(t *testing.T) {
	t.Run("repeated failure aggregates", func(t *testing.T) {
		rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Count: 3,
			Error: &gateway.FaultError{Code: "QuotaExceeded.LoadBalancersNum", Status: 400, Message: "The quota of LoadBalancersNum is exceeded."}})
		if err != nil {
			t.Fatal(err)
		}
		defer cloud.Gateway.RemoveFault(rule.ID)
		name := "events-aggregate"
		createService(t, svcSpec{name: name, ports: []int32{80}})
		defer deleteService(t, name)
		waitIngress(t, name, 60*time.Second)
		var failed []corev1.Event
		for _, e := range events(t, name) {
			if e.Reason == "SyncLoadBalancerFailed" {
				failed = append(failed, e)
			}
		}
		if len(failed) != 1 {
			t.Fatalf("%d SyncLoadBalancerFailed events, want 1 counted 3 times: %+v", len(failed), failed)
		}
		if failed[0].Count != 3 {
			t.Errorf("event count %d, want 3", failed[0].Count)
		}
		if strings.Contains(failed[0].Message, "RequestId") {
			t.Errorf("event message carries a RequestId: %s", failed[0].Message)
		}
		t.Logf("event ×%d: %s", failed[0].Count, failed[0].Message)
	})
	t.Run("busy cloud is a Normal event", func(t *testing.T) {
		// More busy answers than one reconcile's attempts, so a reconcile
		// ends on the busy error and the controller reports it.
		rule, err := cloud.Gateway.AddFault(gateway.FaultRule{Product: "slb", Action: "CreateLoadBalancer", Count: 7,
			Error: &gateway.FaultError{Code: "SystemBusy", Status: 400, Message: "The system is busy."}})
		if err != nil {
			t.Fatal(err)
		}
		defer cloud.Gateway.RemoveFault(rule.ID)
		name := "events-busy"
		createService(t, svcSpec{name: name, ports: []int32{80}})
		defer deleteService(t, name)
		ev := waitEvent(t, name, "EnsuringLoadBalancer", "SystemBusy")
		if ev.Type != corev1.EventTypeNormal {
			t.Errorf("busy cloud reported as %s", ev.Type)
		}
		waitIngress(t, name, 60*time.Second)
		for _, e := range events(t, name) {
			if e.Reason == "SyncLoadBalancerFailed" {
				t.Errorf("busy cloud reported as a failure: %s", e.Message)
			}
		}
		// Each retry of the injected fault is in the log (klog V(2)).
		logged, err := os.ReadFile(ccm.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		retry := regexp.MustCompile(`"Retrying cloud call".*action="CreateLoadBalancer".*code="SystemBusy"`)
		if n := len(retry.FindAll(logged, -1)); n < 2 {
			t.Errorf("%d retries of the busy CreateLoadBalancer logged, want at least 2", n)
		}
	})
}
