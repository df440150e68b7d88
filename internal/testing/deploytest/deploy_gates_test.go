package deploytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aliyun/alibaba-cloud-sdk-go/services/slb"
	"github.com/aliyun/alibaba-cloud-sdk-go/services/vpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/annotations"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/service"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// TestReadinessGateUnderRBAC: the service-controller identity reads a
// not-ready pod of an eni-backed Service and patches its readiness gate
// condition once the pod is registered, with only the rules of the run's
// RBAC (get pods, patch pods/status). This file sorts before deploy_test.go
// so that TestNoForbiddenRequests, which runs last, also covers it.
//
// The pod uses the host network: its IP is its Node's, held by the
// instance's primary ENI, which is what an eni backend must resolve to.
func TestReadinessGateUnderRBAC(t *testing.T) {
	ctx := context.Background()
	cs := kube(t)
	sw, err := vpcClient(t).DescribeVSwitches(vpc.CreateDescribeVSwitchesRequest())
	if err != nil || len(sw.VSwitches.VSwitch) == 0 {
		t.Fatalf("vSwitches: %v", err)
	}
	ids, err := cloud.Seed(&api.Seed{Instances: []api.SeedInstance{{
		Name: "deploy-gates", InstanceType: "ecs.g7.large", VSwitchID: sw.VSwitches.VSwitch[0].VSwitchId,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	id := ids["instance"][0]
	const node, name = "deploy-node-gates", "gates"
	ip := instanceIP(t, id)
	if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: node, InternalIP: ip, Kwok: true}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) }()
	waitInitialized(t, node, id)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{annotations.BackendTypeKey: "eni"}},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cs.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		poll(t, 60*time.Second, "Service "+name+" gone", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}()
	gate := service.ReadinessGate(name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName: node, HostNetwork: true,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
			Containers:     []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
		},
	}
	// The namespace's default ServiceAccount may appear a moment late.
	poll(t, 90*time.Second, "create pod "+name, func(ctx context.Context) (bool, error) {
		_, err := localcluster.CreateHostNetworkPod(ctx, cs, pod, ip)
		return err == nil, err
	})
	defer func() {
		_ = cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()
	poll(t, 60*time.Second, "pod "+name+" registered, its gate True and Ready", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := map[corev1.PodConditionType]corev1.ConditionStatus{}
		for _, c := range p.Status.Conditions {
			st[c.Type] = c.Status
		}
		if st[gate] != corev1.ConditionTrue || st[corev1.PodReady] != corev1.ConditionTrue {
			return false, fmt.Errorf("gate %q, Ready %q", st[gate], st[corev1.PodReady])
		}
		return true, nil
	})
	// The gate was set because the pod is a backend.
	s, err := cs.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := slb.CreateDescribeVServerGroupsRequest()
	req.LoadBalancerId = s.Labels[naming.LabelLoadBalancerID]
	groups, err := slbClient(t).DescribeVServerGroups(req)
	if err != nil || len(groups.VServerGroups.VServerGroup) != 1 {
		t.Fatalf("vServer groups of %s: %v", req.LoadBalancerId, err)
	}
	areq := slb.CreateDescribeVServerGroupAttributeRequest()
	areq.VServerGroupId = groups.VServerGroups.VServerGroup[0].VServerGroupId
	attr, err := slbClient(t).DescribeVServerGroupAttribute(areq)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range attr.BackendServers.BackendServer {
		got = append(got, b.Type+"/"+b.ServerIp)
	}
	if len(got) != 1 || got[0] != "eni/"+ip {
		t.Fatalf("backends %v, want the pod's eni/%s", got, ip)
	}
}
