package localcluster

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// metav1GetOptions is the zero GetOptions, named once for readability.
var metav1GetOptions = metav1.GetOptions{}
