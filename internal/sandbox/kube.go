package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/alicloud-ccm/alicloud-ccm/internal/localcluster"
)

// writeKubeconfig writes a self-contained copy (certificates inline) of the
// admin kubeconfig to dst, so it keeps working wherever it is copied.
func writeKubeconfig(src, dst string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return fmt.Errorf("load %s: %w", src, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return fmt.Errorf("inline certificates of %s: %w", src, err)
	}
	for name, ctx := range cfg.Contexts {
		delete(cfg.Contexts, name)
		cfg.Contexts["sandbox"] = ctx
	}
	cfg.CurrentContext = "sandbox"
	if err := clientcmd.WriteToFile(*cfg, dst); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return os.Chmod(dst, 0o600)
}

// registerNodes registers, as kubelet would, a Node for each instance that
// has none, managed by kwok so it heartbeats. Node names are host names.
func registerNodes(ctx context.Context, cs kubernetes.Interface, instances []Instance) (registered []string, err error) {
	for _, in := range instances {
		_, err := cs.CoreV1().Nodes().Get(ctx, in.HostName, metav1.GetOptions{})
		if err == nil {
			// The Lease still names the kwok of a previous run, which a new
			// kwok would wait out (40s) before heartbeating; like a
			// restarted kubelet, start it afresh.
			if err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, in.HostName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return registered, fmt.Errorf("reset lease of node %s: %w", in.HostName, err)
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			return registered, fmt.Errorf("get node %s: %w", in.HostName, err)
		}
		if _, err := localcluster.RegisterKubeletNode(ctx, cs, localcluster.KubeletNode{Name: in.HostName, InternalIP: in.PrivateIP, Kwok: true}); err != nil {
			return registered, err
		}
		registered = append(registered, in.HostName)
	}
	return registered, nil
}

// sandboxExamples are the files of examples/ that every sandbox deploys;
// the others (nlb-service.yaml needs the sandbox's vSwitches substituted)
// are applied by hand, as the README shows.
var sandboxExamples = []string{"clb-service.yaml"}

// applyExamples creates every object of the sandbox's example files in dir
// that does not exist yet. Existing objects are left as they are, so what a
// user changed (replicas, traffic policy) survives a restart.
func applyExamples(ctx context.Context, cfg *rest.Config, dir string) (created []string, err error) {
	var files []string
	for _, f := range sandboxExamples {
		files = append(files, filepath.Join(dir, f))
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return created, err
		}
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return created, fmt.Errorf("%s: %s %s: %w", f, gvk.Kind, obj.GetName(), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(metav1.NamespaceDefault)
				}
				ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			_, err = ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: "sandbox"})
			switch {
			case err == nil:
				created = append(created, fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName()))
			case apierrors.IsAlreadyExists(err):
			default:
				return created, fmt.Errorf("%s: create %s %s: %w", f, gvk.Kind, obj.GetName(), err)
			}
		}
	}
	return created, nil
}

// readManifests decodes a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: a document lacks kind or metadata.name", path)
		}
		out = append(out, u)
	}
}

// nodeInternalIP is the Node's InternalIP, or the IP kubelet was given.
func nodeInternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return n.Annotations["alpha.kubernetes.io/provided-node-ip"]
}
