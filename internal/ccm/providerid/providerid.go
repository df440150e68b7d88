// Package providerid formats and parses Node providerIDs: <region>.<instance-id>,
// as the existing Alibaba Cloud CCM writes them, also accepting an
// alicloud:// prefix.
package providerid

import (
	"fmt"
	"strings"
)

// Prefix is the optional scheme some clusters put in front of providerIDs.
const Prefix = "alicloud://"

// Format returns the providerID of an instance.
func Format(region, instanceID string) string {
	return region + "." + instanceID
}

// Parse returns the region and instance id of a providerID.
func Parse(providerID string) (region, instanceID string, err error) {
	s := strings.TrimPrefix(strings.TrimSpace(providerID), Prefix)
	region, instanceID, ok := strings.Cut(s, ".")
	if !ok || region == "" || !strings.HasPrefix(instanceID, "i-") || strings.ContainsAny(instanceID, "./ ") {
		return "", "", fmt.Errorf("providerID %q is not <region>.<instance-id> (e.g. cn-hangzhou.i-bp1...)", providerID)
	}
	return region, instanceID, nil
}
