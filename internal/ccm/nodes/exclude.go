package nodes

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/providerid"
)

// Labels that take a Node out of every controller's hands (any value), as
// the existing CCM honours them.
const (
	// LabelExcludeNode keeps a Node out of every controller.
	LabelExcludeNode = "service.alibabacloud.com/exclude-node"
	// LabelExcludeNodeDeprecated is the older spelling of LabelExcludeNode.
	LabelExcludeNodeDeprecated = "service.beta.kubernetes.io/exclude-node"
)

// Excluded reports whether a Node opted out of the CCM by label or is a
// hybrid node that is not an ECS instance: no controller acts for it, and
// the route controller leaves its routes alone even once it is gone.
func Excluded(n *v1.Node) bool {
	if _, ok := n.Labels[LabelExcludeNode]; ok {
		return true
	}
	if _, ok := n.Labels[LabelExcludeNodeDeprecated]; ok {
		return true
	}
	return strings.HasPrefix(n.Spec.ProviderID, providerid.HybridPrefix)
}
