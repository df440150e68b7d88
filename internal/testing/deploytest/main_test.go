package deploytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/ccmtest"
)

const (
	accessKeyID     = "LTAI5tDeployTestKey"
	accessKeySecret = "deploy-test-secret-cmJhY2JhY2s"
	clusterCIDR     = "10.244.0.0/16"
)

// controllerIdentities are the ServiceAccounts the CCM's controllers act as
// with --use-service-account-credentials (their ClientNames).
var controllerIdentities = []string{"node-controller", "service-controller", "route-controller", "cloud-node-controller"}

// One control plane, one emulated cloud and one CCM, running under
// deploy/rbac.yaml only, serve every test of this binary.
var (
	cluster   *localcluster.Cluster
	cloud     *emulator.Emulator
	ccm       *ccmtest.CCM
	instances []string // seeded instances for Nodes (not the CCM's own host)
	stripped  []string // bindings removed so that only deploy/ grants our identities
)

func TestMain(m *testing.M) {
	ccmtest.Main(m, &cluster, ccmtest.WithNodes(clusterCIDR), setup)
}

func setup() error {
	ctx := context.Background()
	var err error
	cloud, err = ccmtest.StartEmulator(accessKeyID, accessKeySecret)
	if err != nil {
		return err
	}
	for name, d := range map[string]time.Duration{store.DelayRouteEntry: 200 * time.Millisecond, store.DelaySLBConfiguring: 100 * time.Millisecond} {
		if err := cloud.Store.Settings().SetDelay(name, d); err != nil {
			return err
		}
	}
	// The first instance is the CCM's own machine (metadata service).
	ids, err := cloud.Seed(ccmtest.SeedDoc(ccmtest.SeedSpec{Instances: 4, NamePrefix: "deploy-"}))
	if err != nil {
		return err
	}
	instances = ids["instance"][1:]

	cs, err := cluster.Clientset()
	if err != nil {
		return err
	}
	if stripped, err = stripOtherBindings(ctx, cs); err != nil {
		return err
	}
	if err := grantKCMNodeIPAM(ctx, cs); err != nil {
		return err
	}
	m, err := loadManifests()
	if fromChart() {
		m, err = chartManifests(ctx)
		fmt.Fprintln(os.Stderr, chartRunMarker)
	}
	if err != nil {
		return err
	}
	if err := apply(ctx, cs, m.byFile["rbac.yaml"]); err != nil {
		return err
	}
	kubeconfig, err := serviceAccountKubeconfig(ctx, cs, filepath.Join(cluster.Dir, "ccm-sa.kubeconfig"))
	if err != nil {
		return err
	}
	cc, err := m.one("ConfigMap")
	if err != nil {
		return err
	}
	args, err := deploymentArgs(m)
	if err != nil {
		return err
	}
	ccm, err = ccmtest.StartCCM(ctx, ccmtest.CCMOptions{
		Kubeconfig: kubeconfig, Emulator: cloud.Addr(),
		AccessKeyID: accessKeyID, AccessKeySecret: accessKeySecret,
		// The example as shipped: region, VPC and vSwitch from the metadata service.
		CloudConfig: cc.(*corev1.ConfigMap).Data["cloud-config.yaml"],
		Args:        args,
		LogPath:     filepath.Join(cluster.LogDir, "cloud-controller-manager.log"),
	})
	return err
}

// deploymentArgs are the Deployment's flags, with the cloud-config path and
// cluster CIDR of this test (StartCCM writes the file and passes its path)
// and a short instance cache.
func deploymentArgs(m *manifests) ([]string, error) {
	o, err := m.one("Deployment")
	if err != nil {
		return nil, err
	}
	// A short instance cache only makes the lifecycle test quicker.
	out := []string{"--instance-cache-ttl=1s"}
	for _, a := range deploymentContainer(o).Args {
		switch {
		case strings.HasPrefix(a, "--cloud-config="):
		case strings.HasPrefix(a, "--cluster-cidr="):
			out = append(out, "--cluster-cidr="+clusterCIDR)
		default:
			out = append(out, a)
		}
	}
	return out, nil
}

// stripOtherBindings deletes every binding that grants our identities
// anything and does not come from deploy/: kube-apiserver's bootstrap policy
// binds system:controller:{node,service,route}-controller to the
// ServiceAccounts of the same names, which would hide a missing rule.
func stripOtherBindings(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	ours := map[string]bool{rootSA: true}
	for _, id := range controllerIdentities {
		ours[id] = true
	}
	matches := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && ours[s.Name] {
				return true
			}
		}
		return false
	}
	var removed []string
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, b := range crbs.Items {
		if matches(b.Subjects) {
			if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
				return nil, fmt.Errorf("delete ClusterRoleBinding %s: %w", b.Name, err)
			}
			removed = append(removed, "ClusterRoleBinding/"+b.Name)
		}
	}
	rbs, err := cs.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, b := range rbs.Items {
		if matches(b.Subjects) {
			if err := cs.RbacV1().RoleBindings(b.Namespace).Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
				return nil, fmt.Errorf("delete RoleBinding %s/%s: %w", b.Namespace, b.Name, err)
			}
			removed = append(removed, "RoleBinding/"+b.Namespace+"/"+b.Name)
		}
	}
	return removed, nil
}

// apply creates the objects of one manifest file with client-go, in order.
func apply(ctx context.Context, cs kubernetes.Interface, objs []object) error {
	for _, o := range objs {
		var err error
		switch v := o.obj.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(v.Namespace).Create(ctx, v, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("cannot apply a %s", o.kind)
		}
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", o.file, o.kind, o.meta.Name, err)
		}
	}
	return nil
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as
// kube-system/cloud-controller-manager with a bound token, as the pod's
// in-cluster config would; server and CA are the admin kubeconfig's.
func serviceAccountKubeconfig(ctx context.Context, cs kubernetes.Interface, path string) (string, error) {
	expiry := int64(2 * 3600)
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, rootSA, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, rootSA, err)
	}
	admin, err := clientcmd.LoadFromFile(cluster.KubeconfigPath)
	if err != nil {
		return "", err
	}
	ctxName := admin.CurrentContext
	src, ok := admin.Clusters[admin.Contexts[ctxName].Cluster]
	if !ok {
		return "", fmt.Errorf("admin kubeconfig: no cluster for context %q", ctxName)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: src.Server, CertificateAuthority: src.CertificateAuthority, CertificateAuthorityData: src.CertificateAuthorityData}
	cfg.AuthInfos[rootSA] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["ccm"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: rootSA}
	cfg.CurrentContext = "ccm"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// grantKCMNodeIPAM gives back the one rule kube-controller-manager's
// node-ipam controller needs beyond deploy/'s node-controller role: it
// shares the node-controller identity and lists Nodes with it to allocate
// pod CIDRs, without which no route could be tested. The CCM's
// node-controller reads Nodes only through the process's informers, so this
// rule is the only permission of that identity not proven by this test.
func grantKCMNodeIPAM(ctx context.Context, cs kubernetes.Interface) error {
	const name = "deploytest:kube-controller-manager-node-ipam"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole %s: %w", name, err)
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "node-controller", Namespace: namespace}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", name, err)
	}
	return nil
}
