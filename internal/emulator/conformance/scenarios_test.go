package conformance_test

import (
	"testing"

	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/requests"
	"github.com/aliyun/alibaba-cloud-sdk-go/sdk/responses"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/testing/emulatortest"
)

// The seeded world every scenario starts from: one VPC with a vSwitch in
// each of two zones (NLB needs two), two instances, an EIP.
const (
	worldVPC   = "vpc-conform"
	worldVSW1  = "vsw-conform1"
	worldVSW2  = "vsw-conform2"
	worldZone1 = "cn-hangzhou-h"
	worldZone2 = "cn-hangzhou-i"
	worldInst1 = "i-conform1"
	worldInst2 = "i-conform2"
	worldTable = "vtb-conform"
	worldSG    = "sg-conform"
)

// newWorld starts an emulator with the seeded world and every
// asynchronous delay at zero, so that scenarios never wait.
func newWorld(t *testing.T) *emulatortest.Env {
	t.Helper()
	env := emulatortest.Start(t)
	env.Seed(t, &api.Seed{
		VPCs: []api.SeedVPC{{ID: worldVPC, CIDRBlock: "192.168.0.0/16", RouteTableID: worldTable,
			IPv6CIDRBlock: "2001:db8:7:100::/56",
			VSwitches: []api.SeedVSwitch{
				{ID: worldVSW1, ZoneID: worldZone1, CIDRBlock: "192.168.1.0/24", IPv6CIDRBlock: ptr(1)},
				{ID: worldVSW2, ZoneID: worldZone2, CIDRBlock: "192.168.2.0/24", IPv6CIDRBlock: ptr(2)},
			}}},
		Instances: []api.SeedInstance{
			{ID: worldInst1, VSwitchID: worldVSW1, PrivateIP: "192.168.1.10", Tags: map[string]string{"team": "a"}},
			{ID: worldInst2, VSwitchID: worldVSW2, PrivateIP: "192.168.2.10"},
		},
		SecurityGroups: []api.SeedSecurityGroup{{ID: worldSG, VpcID: worldVPC}},
		Certificates:   []api.SeedCertificate{{ID: "cert-conform-1", Domain: "a.example.com"}, {ID: "cert-conform-2", Domain: "b.example.com"}},
		EIPs:           []api.SeedEIP{{ID: "eip-conform", IPAddress: "47.0.0.1", InstanceID: worldInst1, InstanceType: "EcsInstance"}},
	})
	s := env.Emulator.Store.Settings()
	delays, _ := s.Snapshot()
	for name := range delays {
		if err := s.SetDelay(name, 0); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func ptr[T any](v T) *T { return &v }

type p = map[string]string

// scenarios are the life cycles whose every response is checked; together
// they call each served action at least once successfully.
func scenarios(t *testing.T) [][]step {
	return [][]step{ecsScenario(), vpcScenario(), slbScenario(t), nlbScenario()}
}

func ecsScenario() []step {
	e := func(action string, params p, save ...string) step { return st("ecs", action, params, save...) }
	return []step{
		e("DescribeInstances", p{"InstanceIds": `["` + worldInst1 + `","` + worldInst2 + `"]`, "AdditionalAttributes.1": "NETWORK_PRIMARY_ENI_IP"}, "eni", "Instances.Instance.0.NetworkInterfaces.NetworkInterface.0.NetworkInterfaceId"),
		e("DescribeInstances", p{"MaxResults": "1"}),
		e("DescribeInstanceAttribute", p{"InstanceId": worldInst1}),
		e("RunInstances", p{"ImageId": "aliyun_3_x64", "InstanceType": "ecs.g7.large", "VSwitchId": worldVSW1, "SecurityGroupId": worldSG, "Amount": "2", "Tag.1.Key": "k", "Tag.1.Value": "v"},
			"new1", "InstanceIdSets.InstanceIdSet.0", "new2", "InstanceIdSets.InstanceIdSet.1"),
		e("StopInstances", p{"InstanceId.1": "{new1}", "InstanceId.2": "{new2}"}),
		e("StartInstances", p{"InstanceId.1": "{new1}"}),
		e("DescribeNetworkInterfaces", p{"VpcId": worldVPC, "MaxResults": "10"}),
		e("DescribeNetworkInterfaces", p{"NetworkInterfaceId.1": "{eni}"}),
		e("ModifyNetworkInterfaceAttribute", p{"NetworkInterfaceId": "{eni}", "SourceDestCheck": "false", "Description": "primary"}),
		e("AssignIpv6Addresses", p{"NetworkInterfaceId": "{eni}", "Ipv6AddressCount": "1"}, "v6", "Ipv6Sets.Ipv6Address.0"),
		e("UnassignIpv6Addresses", p{"NetworkInterfaceId": "{eni}", "Ipv6Address.1": "{v6}"}),
		e("CreateSecurityGroup", p{"VpcId": worldVPC, "SecurityGroupName": "conform", "Tag.1.Key": "k", "Tag.1.Value": "v"}, "sg", "SecurityGroupId"),
		e("AuthorizeSecurityGroup", p{"SecurityGroupId": "{sg}", "IpProtocol": "tcp", "PortRange": "80/80", "SourceCidrIp": "10.0.0.0/8"}),
		e("DescribeSecurityGroups", p{"VpcId": worldVPC}),
		e("DescribeSecurityGroupAttribute", p{"SecurityGroupId": "{sg}"}, "rule", "Permissions.Permission.0.SecurityGroupRuleId"),
		e("ModifySecurityGroupRule", p{"SecurityGroupId": "{sg}", "SecurityGroupRuleId": "{rule}", "Description": "web"}),
		e("ModifySecurityGroupAttribute", p{"SecurityGroupId": "{sg}", "SecurityGroupName": "renamed"}),
		e("RevokeSecurityGroup", p{"SecurityGroupId": "{sg}", "SecurityGroupRuleId.1": "{rule}"}),
		e("TagResources", p{"ResourceType": "instance", "ResourceId.1": worldInst1, "Tag.1.Key": "env", "Tag.1.Value": "test"}),
		e("ListTagResources", p{"ResourceType": "instance", "ResourceId.1": worldInst1}),
		e("DescribeTags", p{"ResourceType": "instance", "ResourceId": worldInst1}),
		e("UntagResources", p{"ResourceType": "instance", "ResourceId.1": worldInst1, "TagKey.1": "env"}),
		e("DescribeSecurityGroupAttribute", p{"SecurityGroupId": "sg-missing"}).fails("InvalidSecurityGroupId.NotFound"),
		e("RunInstances", p{"ImageId": "aliyun_3_x64", "InstanceType": "ecs.g7.large", "VSwitchId": "vsw-missing", "SecurityGroupId": worldSG}).fails("InvalidVSwitchId.NotFound"),
		e("AuthorizeSecurityGroup", p{"SecurityGroupId": "{sg}", "IpProtocol": "bogus", "PortRange": "80/80", "SourceCidrIp": "10.0.0.0/8"}).fails("InvalidIpProtocol.Malformed"),
		e("TagResources", p{"ResourceType": "bogus", "ResourceId.1": worldInst1, "Tag.1.Key": "k", "Tag.1.Value": "v"}).fails("InvalidResourceType.NotFound"),
		e("DeleteSecurityGroup", p{"SecurityGroupId": "{sg}"}),
		e("DeleteInstance", p{"InstanceId": "{new1}", "Force": "true"}),
		e("DeleteInstances", p{"InstanceId.1": "{new2}", "Force": "true"}),
		e("DescribeInstanceAttribute", p{"InstanceId": "i-missing"}).fails("InvalidInstanceId.NotFound"),
	}
}

func vpcScenario() []step {
	v := func(action string, params p, save ...string) step { return st("vpc", action, params, save...) }
	return []step{
		v("CreateVpc", p{"CidrBlock": "10.0.0.0/8", "VpcName": "conform"}, "vpc", "VpcId"),
		v("DescribeVpcs", p{"VpcId": "{vpc}"}),
		v("DescribeVpcAttribute", p{"VpcId": worldVPC}),
		v("CreateVSwitch", p{"VpcId": "{vpc}", "ZoneId": worldZone1, "CidrBlock": "10.1.0.0/16"}, "vsw", "VSwitchId"),
		v("DescribeVSwitches", p{"VpcId": worldVPC}),
		v("DescribeVSwitchAttributes", p{"VSwitchId": worldVSW1}),
		v("DescribeRouteTableList", p{"VpcId": worldVPC}),
		v("CreateRouteEntry", p{"RouteTableId": worldTable, "DestinationCidrBlock": "172.16.1.0/24", "NextHopType": "Instance", "NextHopId": worldInst1}, "rte", "RouteEntryId"),
		v("CreateRouteEntries", p{"RouteEntries.1.RouteTableId": worldTable, "RouteEntries.1.DstCidrBlock": "172.16.2.0/24",
			"RouteEntries.1.NextHop": worldInst2, "RouteEntries.1.NextHopType": "Instance"}),
		v("DescribeRouteEntryList", p{"RouteTableId": worldTable, "MaxResult": "100"}),
		v("CreateRouteEntry", p{"RouteTableId": worldTable, "DestinationCidrBlock": "172.16.1.0/24", "NextHopType": "Instance", "NextHopId": worldInst1}).fails("InvalidCIDRBlock.Duplicate"),
		v("CreateRouteEntry", p{"RouteTableId": worldTable, "DestinationCidrBlock": "172.16.9.0/24", "NextHopType": "Instance", "NextHopId": "i-missing"}).fails("InvalidNextHop.NotFound"),
		v("DescribeRouteEntryList", p{"RouteTableId": "vtb-missing"}).fails("InvalidRouteTableId.NotFound"),
		v("DescribeVSwitchAttributes", p{"VSwitchId": "vsw-missing"}).fails("InvalidVSwitchId.NotFound"),
		v("ModifyRouteEntry", p{"RouteEntryId": "{rte}", "RouteEntryName": "renamed"}),
		v("DeleteRouteEntry", p{"RouteEntryId": "{rte}"}),
		v("DeleteRouteEntries", p{"RouteEntries.1.RouteTableId": worldTable, "RouteEntries.1.DstCidrBlock": "172.16.2.0/24", "RouteEntries.1.NextHop": worldInst2}),
		v("DescribeEipAddresses", p{}),
		v("DeleteRouteEntry", p{"RouteEntryId": "rte-missing"}).fails("InvalidRouteEntry.NotFound"),
		v("DeleteVSwitch", p{"VSwitchId": "{vsw}"}),
		v("DeleteVpc", p{"VpcId": "{vpc}"}),
		v("DescribeVpcAttribute", p{"VpcId": "vpc-missing"}).fails("InvalidVpcId.NotFound"),
	}
}

func slbScenario(t *testing.T) []step {
	s := func(action string, params p, save ...string) step { return st("slb", action, params, save...) }
	cert, key := emulatortest.SelfSigned(t, "conform.example.com", false)
	ca, _ := emulatortest.SelfSigned(t, "Conform CA", true)
	backends := `[{"ServerId":"` + worldInst1 + `","Weight":"100","Type":"ecs","Port":"80"}]`
	return []step{
		s("CreateLoadBalancer", p{"LoadBalancerName": "conform", "AddressType": "intranet", "VSwitchId": worldVSW1, "LoadBalancerSpec": "slb.s1.small"}, "lb", "LoadBalancerId"),
		s("CreateLoadBalancer", p{"LoadBalancerName": "conform-internet", "AddressType": "internet"}, "lb2", "LoadBalancerId"),
		s("DescribeLoadBalancers", p{}),
		s("DescribeLoadBalancerAttribute", p{"LoadBalancerId": "{lb}"}),
		s("SetLoadBalancerName", p{"LoadBalancerId": "{lb}", "LoadBalancerName": "renamed"}),
		s("SetLoadBalancerStatus", p{"LoadBalancerId": "{lb}", "LoadBalancerStatus": "active"}),
		s("SetLoadBalancerDeleteProtection", p{"LoadBalancerId": "{lb2}", "DeleteProtection": "off"}),
		s("SetLoadBalancerModificationProtection", p{"LoadBalancerId": "{lb}", "ModificationProtectionStatus": "NonProtection"}),
		s("ModifyLoadBalancerInstanceSpec", p{"LoadBalancerId": "{lb}", "LoadBalancerSpec": "slb.s2.small"}),
		s("ModifyLoadBalancerInternetSpec", p{"LoadBalancerId": "{lb2}", "InternetChargeType": "paybybandwidth", "Bandwidth": "10"}),
		s("ModifyLoadBalancerInstanceChargeType", p{"LoadBalancerId": "{lb}", "InstanceChargeType": "PayByCLCU"}),
		s("AddBackendServers", p{"LoadBalancerId": "{lb}", "BackendServers": `[{"ServerId":"` + worldInst1 + `","Weight":"100"}]`}),
		s("SetBackendServers", p{"LoadBalancerId": "{lb}", "BackendServers": `[{"ServerId":"` + worldInst1 + `","Weight":"50"}]`}),
		s("RemoveBackendServers", p{"LoadBalancerId": "{lb}", "BackendServers": `[{"ServerId":"` + worldInst1 + `"}]`}),
		s("CreateVServerGroup", p{"LoadBalancerId": "{lb}", "VServerGroupName": "conform", "BackendServers": backends}, "vsg", "VServerGroupId"),
		s("AddVServerGroupBackendServers", p{"VServerGroupId": "{vsg}", "BackendServers": `[{"ServerId":"` + worldInst2 + `","Weight":"100","Type":"ecs","Port":"80"}]`}),
		s("SetVServerGroupAttribute", p{"VServerGroupId": "{vsg}", "VServerGroupName": "renamed"}),
		s("ModifyVServerGroupBackendServers", p{"VServerGroupId": "{vsg}", "OldBackendServers": `[{"ServerId":"` + worldInst2 + `","Port":"80"}]`,
			"NewBackendServers": `[{"ServerId":"` + worldInst2 + `","Port":"81","Weight":"10"}]`}),
		s("RemoveVServerGroupBackendServers", p{"VServerGroupId": "{vsg}", "BackendServers": `[{"ServerId":"` + worldInst2 + `","Port":"81"}]`}),
		s("DescribeVServerGroups", p{"LoadBalancerId": "{lb}", "IncludeListener": "true"}),
		s("DescribeVServerGroupAttribute", p{"VServerGroupId": "{vsg}"}),
		s("CreateAccessControlList", p{"AclName": "conform"}, "acl", "AclId"),
		s("AddAccessControlListEntry", p{"AclId": "{acl}", "AclEntrys": `[{"entry":"10.0.0.0/8","comment":"ten"}]`}),
		s("SetAccessControlListAttribute", p{"AclId": "{acl}", "AclName": "renamed"}),
		s("DescribeAccessControlLists", p{}),
		s("DescribeAccessControlListAttribute", p{"AclId": "{acl}"}),
		s("UploadServerCertificate", p{"ServerCertificate": cert, "PrivateKey": key, "ServerCertificateName": "conform"}, "cert", "ServerCertificateId"),
		s("UploadCACertificate", p{"CACertificate": ca, "CACertificateName": "conform-ca"}, "ca", "CACertificateId"),
		s("DescribeServerCertificates", p{}),
		s("DescribeCACertificates", p{}),
		s("SetServerCertificateName", p{"ServerCertificateId": "{cert}", "ServerCertificateName": "renamed"}),
		s("SetCACertificateName", p{"CACertificateId": "{ca}", "CACertificateName": "renamed"}),
		s("CreateLoadBalancerTCPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "80", "VServerGroupId": "{vsg}", "Bandwidth": "-1",
			"AclStatus": "on", "AclId": "{acl}", "AclType": "white"}),
		s("CreateLoadBalancerUDPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "53", "BackendServerPort": "53", "Bandwidth": "-1"}),
		s("CreateLoadBalancerHTTPSListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "443", "BackendServerPort": "80", "Bandwidth": "-1",
			"StickySession": "off", "HealthCheck": "on", "ServerCertificateId": "{cert}"}),
		s("CreateLoadBalancerHTTPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "8080", "BackendServerPort": "80", "Bandwidth": "-1",
			"StickySession": "off", "HealthCheck": "on"}),
		s("SetLoadBalancerTCPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "80", "HealthCheckInterval": "5"}),
		s("SetLoadBalancerUDPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "53", "HealthCheckInterval": "5"}),
		s("SetLoadBalancerHTTPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "8080", "Gzip": "off"}),
		s("SetLoadBalancerHTTPSListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "443", "EnableHttp2": "off"}),
		s("CreateDomainExtension", p{"LoadBalancerId": "{lb}", "ListenerPort": "443", "Domain": "conform.example.com", "ServerCertificateId": "{cert}"}, "dext", "DomainExtensionId"),
		s("DescribeDomainExtensions", p{"LoadBalancerId": "{lb}", "ListenerPort": "443"}),
		s("SetDomainExtensionAttribute", p{"DomainExtensionId": "{dext}", "ServerCertificateId": "{cert}"}),
		s("CreateLoadBalancerTCPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "80", "BackendServerPort": "80"}).fails("ListenerAlreadyExists"),
		s("CreateLoadBalancerTCPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "8080", "BackendServerPort": "80"}).fails("ListenerPortConflict"),
		s("CreateLoadBalancerTCPListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "81", "BackendServerPort": "80", "Scheduler": "wlc"}).fails("InvalidParameter"),
		s("DescribeLoadBalancerTCPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "9999"}).fails("ListenerNotFound"),
		s("AddVServerGroupBackendServers", p{"VServerGroupId": "{vsg}", "BackendServers": `[{"ServerId":"i-missing","Port":"80"}]`}).fails("InvalidServerId.NotFound"),
		s("DeleteVServerGroup", p{"VServerGroupId": "{vsg}"}).fails("RspoolVipExist"),
		s("SetLoadBalancerDeleteProtection", p{"LoadBalancerId": "{lb}", "DeleteProtection": "on"}),
		s("DeleteLoadBalancer", p{"LoadBalancerId": "{lb}"}).fails("OperationDenied.DeleteProtectionIsOn"),
		s("StartLoadBalancerListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "80"}),
		s("DescribeLoadBalancerTCPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "80"}),
		s("DescribeLoadBalancerUDPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "53"}),
		s("DescribeLoadBalancerHTTPListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "8080"}),
		s("DescribeLoadBalancerHTTPSListenerAttribute", p{"LoadBalancerId": "{lb}", "ListenerPort": "443"}),
		s("DescribeLoadBalancerListeners", p{"LoadBalancerId.1": "{lb}"}),
		s("DescribeHealthStatus", p{"LoadBalancerId": "{lb}"}),
		s("TagResources", p{"ResourceType": "instance", "ResourceId.1": "{lb}", "Tag.1.Key": "env", "Tag.1.Value": "test"}),
		s("ListTagResources", p{"ResourceType": "instance", "ResourceId.1": "{lb}"}),
		s("UntagResources", p{"ResourceType": "instance", "ResourceId.1": "{lb}", "TagKey.1": "env"}),
		s("AddTags", p{"LoadBalancerId": "{lb}", "Tags": `[{"TagKey":"team","TagValue":"a"}]`}),
		s("DescribeTags", p{"LoadBalancerId": "{lb}"}),
		s("RemoveTags", p{"LoadBalancerId": "{lb}", "Tags": `[{"TagKey":"team","TagValue":"a"}]`}),
		s("StopLoadBalancerListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "80"}),
		s("DeleteDomainExtension", p{"DomainExtensionId": "{dext}"}),
		s("DeleteLoadBalancerListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "80"}),
		s("DeleteLoadBalancerListener", p{"LoadBalancerId": "{lb}", "ListenerPort": "443"}),
		s("RemoveAccessControlListEntry", p{"AclId": "{acl}", "AclEntrys": `[{"entry":"10.0.0.0/8"}]`}),
		s("DeleteAccessControlList", p{"AclId": "{acl}"}),
		s("DeleteVServerGroup", p{"VServerGroupId": "{vsg}"}),
		s("DeleteServerCertificate", p{"ServerCertificateId": "{cert}"}),
		s("DeleteCACertificate", p{"CACertificateId": "{ca}"}),
		s("DeleteLoadBalancer", p{"LoadBalancerId": "{lb2}"}),
		s("DescribeLoadBalancerAttribute", p{"LoadBalancerId": "lb-missing"}).fails("InvalidLoadBalancerId.NotFound"),
	}
}

func nlbScenario() []step {
	n := func(action string, params p, save ...string) step { return st("nlb", action, params, save...) }
	zones := p{"LoadBalancerType": "Network", "AddressType": "Intranet", "AddressIpVersion": "DualStack", "VpcId": worldVPC, "LoadBalancerName": "conform",
		"ZoneMappings.1.ZoneId": worldZone1, "ZoneMappings.1.VSwitchId": worldVSW1,
		"ZoneMappings.2.ZoneId": worldZone2, "ZoneMappings.2.VSwitchId": worldVSW2}
	return []step{
		n("DescribeRegions", p{}),
		n("DescribeZones", p{}),
		n("CreateLoadBalancer", zones, "nlb", "LoadbalancerId"),
		n("GetLoadBalancerAttribute", p{"LoadBalancerId": "{nlb}"}),
		n("ListLoadBalancers", p{"LoadBalancerIds.1": "{nlb}"}),
		n("UpdateLoadBalancerAttribute", p{"LoadBalancerId": "{nlb}", "LoadBalancerName": "renamed", "CrossZoneEnabled": "true"}),
		n("UpdateLoadBalancerProtection", p{"LoadBalancerId": "{nlb}", "DeletionProtectionEnabled": "false"}),
		n("UpdateLoadBalancerAddressTypeConfig", p{"LoadBalancerId": "{nlb}", "AddressType": "Internet"}),
		n("UpdateLoadBalancerZones", p{"LoadBalancerId": "{nlb}",
			"ZoneMappings.1.ZoneId": worldZone1, "ZoneMappings.1.VSwitchId": worldVSW1,
			"ZoneMappings.2.ZoneId": worldZone2, "ZoneMappings.2.VSwitchId": worldVSW2}),
		n("EnableLoadBalancerIpv6Internet", p{"LoadBalancerId": "{nlb}"}),
		n("DisableLoadBalancerIpv6Internet", p{"LoadBalancerId": "{nlb}"}),
		n("AttachCommonBandwidthPackageToLoadBalancer", p{"LoadBalancerId": "{nlb}", "BandwidthPackageId": "cbwp-conform"}),
		n("DetachCommonBandwidthPackageFromLoadBalancer", p{"LoadBalancerId": "{nlb}", "BandwidthPackageId": "cbwp-conform"}),
		n("CreateServerGroup", p{"ServerGroupName": "conform", "VpcId": worldVPC, "Protocol": "TCP"}, "sgp", "ServerGroupId", "job", "JobId"),
		n("GetJobStatus", p{"JobId": "{job}"}),
		n("ListAsynJobs", p{"JobIds.1": "{job}"}),
		n("ListServerGroups", p{"ServerGroupIds.1": "{sgp}"}),
		n("UpdateServerGroupAttribute", p{"ServerGroupId": "{sgp}", "ServerGroupName": "renamed"}),
		n("AddServersToServerGroup", p{"ServerGroupId": "{sgp}", "Servers.1.ServerId": worldInst1, "Servers.1.ServerType": "Ecs", "Servers.1.Port": "80"}),
		n("UpdateServerGroupServersAttribute", p{"ServerGroupId": "{sgp}", "Servers.1.ServerId": worldInst1, "Servers.1.ServerType": "Ecs", "Servers.1.Port": "80", "Servers.1.Weight": "50"}),
		n("ListServerGroupServers", p{"ServerGroupId": "{sgp}"}),
		n("RemoveServersFromServerGroup", p{"ServerGroupId": "{sgp}", "Servers.1.ServerId": worldInst1, "Servers.1.ServerType": "Ecs", "Servers.1.Port": "80"}),
		n("CreateListener", p{"LoadBalancerId": "{nlb}", "ListenerProtocol": "TCP", "ListenerPort": "80", "ServerGroupId": "{sgp}"}, "lsn", "ListenerId"),
		n("ListListeners", p{"LoadBalancerIds.1": "{nlb}"}),
		n("CreateListener", p{"LoadBalancerId": "{nlb}", "ListenerProtocol": "TCP", "ListenerPort": "80", "ServerGroupId": "{sgp}"}).fails("Conflict.Port"),
		n("DeleteServerGroup", p{"ServerGroupId": "{sgp}"}).fails("ResourceInUse.ServerGroup"),
		n("CreateLoadBalancer", mergeP(zones, p{"DryRun": "true"})).fails("DryRunOperation"),
		n("GetJobStatus", p{"JobId": "job-missing"}).fails("ResourceNotFound.JobId"),
		n("CreateServerGroup", p{"ServerGroupName": "missing-vpc", "VpcId": "vpc-missing"}).fails("ResourceNotFound.Vpc"),
		n("ListServerGroupServers", p{"ServerGroupId": "sgp-missing"}).fails("ResourceNotFound.serverGroup"),
		n("UpdateLoadBalancerProtection", p{"LoadBalancerId": "{nlb}", "DeletionProtectionEnabled": "true"}),
		n("DeleteLoadBalancer", p{"LoadBalancerId": "{nlb}"}).fails("OperationDenied.DeletionProtectionEnabled"),
		n("UpdateLoadBalancerProtection", p{"LoadBalancerId": "{nlb}", "DeletionProtectionEnabled": "false"}),
		n("GetListenerAttribute", p{"ListenerId": "{lsn}"}),
		n("GetListenerHealthStatus", p{"ListenerId": "{lsn}"}),
		n("UpdateListenerAttribute", p{"ListenerId": "{lsn}", "ListenerDescription": "renamed"}),
		n("StopListener", p{"ListenerId": "{lsn}"}),
		n("StartListener", p{"ListenerId": "{lsn}"}),
		n("CreateServerGroup", p{"ServerGroupName": "conform-ssl", "VpcId": worldVPC, "Protocol": "TCP"}, "sgp2", "ServerGroupId"),
		n("CreateListener", p{"LoadBalancerId": "{nlb}", "ListenerProtocol": "TCPSSL", "ListenerPort": "443", "ServerGroupId": "{sgp2}",
			"CertificateIds.1": "cert-conform-1"}, "ssl", "ListenerId"),
		n("AssociateAdditionalCertificatesWithListener", p{"ListenerId": "{ssl}", "AdditionalCertificateIds.1": "cert-conform-2"}),
		n("ListListenerCertificates", p{"ListenerId": "{ssl}"}),
		n("DisassociateAdditionalCertificatesWithListener", p{"ListenerId": "{ssl}", "AdditionalCertificateIds.1": "cert-conform-2"}),
		n("DeleteListener", p{"ListenerId": "{ssl}"}),
		n("DeleteServerGroup", p{"ServerGroupId": "{sgp2}"}),
		n("LoadBalancerJoinSecurityGroup", p{"LoadBalancerId": "{nlb}", "SecurityGroupIds.1": worldSG}),
		n("LoadBalancerLeaveSecurityGroup", p{"LoadBalancerId": "{nlb}", "SecurityGroupIds.1": worldSG}),
		n("TagResources", p{"ResourceType": "loadbalancer", "ResourceId.1": "{nlb}", "Tag.1.Key": "env", "Tag.1.Value": "test"}),
		n("ListTagResources", p{"ResourceType": "loadbalancer", "ResourceId.1": "{nlb}"}),
		n("UntagResources", p{"ResourceType": "loadbalancer", "ResourceId.1": "{nlb}", "TagKey.1": "env"}),
		n("DeleteListener", p{"ListenerId": "{lsn}"}),
		n("DeleteServerGroup", p{"ServerGroupId": "{sgp}"}),
		n("DeleteLoadBalancer", p{"LoadBalancerId": "{nlb}"}),
		n("GetLoadBalancerAttribute", p{"LoadBalancerId": "nlb-missing"}).fails("ResourceNotFound.loadBalancer"),
	}
}

// st builds a step; save lists name, path pairs.
func st(product, action string, params p, save ...string) step {
	s := step{product: product, action: action, params: params}
	if len(save) > 0 {
		s.save = map[string]string{}
		for i := 0; i+1 < len(save); i += 2 {
			s.save[save[i]] = save[i+1]
		}
	}
	return s
}

// fails turns a step into an expected error with code.
func (s step) fails(code string) step {
	s.code = code
	return s
}

// listAsynJobsRequest is ListAsynJobs, which the legacy SDK v1.63.107 (and
// nlb-20220430/v3) lacks; the CCM calls it through a CommonRequest.
type listAsynJobsRequest struct{ *requests.RpcRequest }

// listAsynJobsResponse is ListAsynJobs' response as the API reference
// gives it (alibaba-openapi.md §3.2: Jobs[{Id,Status}], TotalCount a string).
type listAsynJobsResponse struct {
	*responses.BaseResponse
	RequestId  string `json:"RequestId"`
	TotalCount string `json:"TotalCount"`
	Jobs       []struct {
		Id     string `json:"Id"`
		Status string `json:"Status"`
	} `json:"Jobs"`
}

func newListAsynJobsRequest() *listAsynJobsRequest {
	r := &listAsynJobsRequest{RpcRequest: &requests.RpcRequest{}}
	r.InitWithApiInfo("Nlb", "2022-04-30", "ListAsynJobs", "nlb", "openAPI")
	r.Method = requests.POST
	return r
}

func newListAsynJobsResponse() *listAsynJobsResponse {
	return &listAsynJobsResponse{BaseResponse: &responses.BaseResponse{}}
}

// extraModels are the served actions without a model in the legacy SDK.
var extraModels = map[string]map[string]model{
	"nlb": {"ListAsynJobs": m(newListAsynJobsRequest, newListAsynJobsResponse)},
}

// mergeP returns a copy of a with b's parameters added.
func mergeP(a, b p) p {
	out := p{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
