// Package admissiontest runs the committed ValidatingAdmissionPolicy
// (deploy/admission, generated from the annotation registry) on a real
// kube-apiserver: a Service with a bad annotation is refused or warned
// about with the CCM's own message, crossed value by value with the
// parser (docs/admission.md).
package admissiontest
