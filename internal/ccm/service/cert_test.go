package service_test

import (
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// selfSigned returns a PEM certificate and key for HTTPS listener tests.
func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	return emulatortest.SelfSigned(t, "svc.example.com", false)
}
