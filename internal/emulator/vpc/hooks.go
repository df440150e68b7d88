package vpc

// ComputeHooks are the ECS facts VPC needs (route next hops, dependency
// checks). ECS hands them over in ecs.New because vpc cannot import ecs.
// Unset hooks behave as "nothing exists".
type ComputeHooks struct {
	// InstanceVPC returns the VPC of an ECS instance.
	InstanceVPC func(id string) (string, bool)
	// ENIVPC returns the VPC of an elastic network interface.
	ENIVPC func(id string) (string, bool)
	// InstancesInVSwitch counts instances and ENIs placed in a vSwitch.
	InstancesInVSwitch func(vswitchID string) int
	// InstancesInVPC counts instances placed in a VPC.
	InstancesInVPC func(vpcID string) int
	// SecurityGroupsInVPC counts security groups of a VPC.
	SecurityGroupsInVPC func(vpcID string) int
}

// SetComputeHooks installs the ECS lookups; called once by ecs.New.
func (s *Service) SetComputeHooks(h ComputeHooks) { s.compute = h }

func (s *Service) instanceVPC(id string) (string, bool) {
	if s.compute.InstanceVPC == nil {
		return "", false
	}
	return s.compute.InstanceVPC(id)
}

func (s *Service) eniVPC(id string) (string, bool) {
	if s.compute.ENIVPC == nil {
		return "", false
	}
	return s.compute.ENIVPC(id)
}

func (s *Service) countIn(f func(string) int, id string) int {
	if f == nil {
		return 0
	}
	return f(id)
}

// UnbindEIPs disassociates every EIP bound to instanceID, as the cloud does
// when the instance is released; the caller holds the store's write lock.
func (s *Service) UnbindEIPs(instanceID string) {
	for _, e := range s.state.EIPs {
		if e.InstanceID == instanceID {
			e.InstanceID, e.InstanceType = "", ""
		}
	}
}
