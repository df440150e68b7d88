package cloud_test

import "github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"

// emulatortestSeed is a VPC with one instance, so the metadata service has
// an instance to describe.
func emulatortestSeed() *api.Seed {
	return &api.Seed{
		VPCs:      []api.SeedVPC{{CIDRBlock: "192.168.0.0/16", VSwitches: []api.SeedVSwitch{{ID: "vsw-test", ZoneID: "cn-hangzhou-h", CIDRBlock: "192.168.0.0/24"}}}},
		Instances: []api.SeedInstance{{VSwitchID: "vsw-test"}},
	}
}
