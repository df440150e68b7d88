// Package providerid formats and parses Node providerIDs. The CCM writes
// <region>.<instance-id>, as the existing Alibaba Cloud CCM does, and reads
// every form that CCM and the tools around it accept: the bare form, an
// alicloud:// prefix, and any <scheme>://<optional>/<segments>/<region>.<id>
// whose last path segment is the bare form.
package providerid

import (
	"fmt"
	"strings"
)

// Prefix is the scheme some clusters put in front of providerIDs.
const Prefix = "alicloud://"

// HybridPrefix marks nodes that are not ECS instances (ACK hybrid
// clusters); such providerIDs never name an instance.
const HybridPrefix = "ack-hybrid://"

// Format returns the providerID of an instance.
func Format(region, instanceID string) string {
	return region + "." + instanceID
}

// Parse returns the region and instance id of a providerID.
func Parse(providerID string) (region, instanceID string, err error) {
	s := strings.TrimSpace(providerID)
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if scheme == "" || strings.HasPrefix(s, HybridPrefix) {
			return "", "", fmt.Errorf("providerID %q does not name an ECS instance", providerID)
		}
		// The segments before the last (zone, account, cluster...) are
		// informational: the last one alone identifies the instance.
		s = rest[strings.LastIndex(rest, "/")+1:]
	}
	region, instanceID, ok := strings.Cut(s, ".")
	if !ok || region == "" || strings.Contains(region, "/") || !strings.HasPrefix(instanceID, "i-") ||
		len(instanceID) < 3 || strings.ContainsAny(instanceID, "./ ") {
		return "", "", fmt.Errorf("providerID %q is not [<scheme>://[<segments>/]]<region>.<instance-id> (e.g. cn-hangzhou.i-bp1...)", providerID)
	}
	return region, instanceID, nil
}
