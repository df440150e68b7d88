package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hashInput is what the hash covers; encoding/json sorts map keys and keeps
// struct order, which makes the encoding stable.
type hashInput struct {
	Ports                    []corev1.ServicePort                `json:"ports"`
	Type                     corev1.ServiceType                  `json:"type"`
	ExternalTrafficPolicy    corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy"`
	LoadBalancerClass        *string                             `json:"loadBalancerClass"`
	Annotations              map[string]string                   `json:"annotations"`
	DeletionTimestamp        *metav1.Time                        `json:"deletionTimestamp"`
	LoadBalancerSourceRanges []string                            `json:"loadBalancerSourceRanges,omitempty"`
}

// Hash is the value of LabelHash: SHA-256 over the Service fields that
// shape its load balancer and listeners. It is cut to 56 hex characters
// because label values are limited to 63.
func Hash(svc *corev1.Service) string {
	in := hashInput{
		Ports:                    svc.Spec.Ports,
		Type:                     svc.Spec.Type,
		ExternalTrafficPolicy:    svc.Spec.ExternalTrafficPolicy,
		LoadBalancerClass:        svc.Spec.LoadBalancerClass,
		Annotations:              svc.Annotations,
		DeletionTimestamp:        svc.DeletionTimestamp,
		LoadBalancerSourceRanges: svc.Spec.LoadBalancerSourceRanges,
	}
	if in.Ports == nil {
		in.Ports = []corev1.ServicePort{}
	}
	if len(in.Annotations) == 0 {
		in.Annotations = nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		// Only strings, numbers and times are encoded; this cannot fail.
		panic("naming: encode service hash input: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:28])
}

// HashChanged reports whether the Service changed since the hash label was
// written (a missing label counts as changed).
func HashChanged(svc *corev1.Service) bool {
	v, ok := svc.Labels[LabelHash]
	return !ok || v != Hash(svc)
}
