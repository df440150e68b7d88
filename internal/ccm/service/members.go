package service

// Member is one backend server of a load balancer's server group (a CLB
// vServer group backend or an NLB server), as the member diff needs it.
type Member interface {
	// MemberKey identifies the server and port within the group.
	MemberKey() string
	// MemberWeight is the server's weight, 0–100.
	MemberWeight() int
	// MemberDescription marks who registered the server.
	MemberDescription() string
}

// MemberPlan is the change to one group's members, applied in the order
// Remove, Update, Add (removals first keep the load balancer under its
// backend quota).
type MemberPlan[M Member] struct {
	// Remove, Update and Add are the members to remove, reweigh and add.
	Remove, Update, Add []M
}

// Empty reports whether the plan changes nothing.
func (p MemberPlan[M]) Empty() bool { return len(p.Remove)+len(p.Update)+len(p.Add) == 0 }

// PlanMembers compares a group's desired members with its current ones.
// In a shared (bound) group only members carrying our description are
// ours to remove or reweigh, and a member someone else registered is left
// as it is; in our own group every member is ours.
func PlanMembers[M Member](desired, current []M, shared bool, description string, ignoreWeight bool) MemberPlan[M] {
	var plan MemberPlan[M]
	cur := map[string]M{}
	for _, c := range current {
		cur[c.MemberKey()] = c
	}
	ours := func(m M) bool { return !shared || m.MemberDescription() == description }
	want := map[string]bool{}
	for _, d := range desired {
		want[d.MemberKey()] = true
		c, ok := cur[d.MemberKey()]
		if !ok {
			plan.Add = append(plan.Add, d)
			continue
		}
		if ours(c) && !ignoreWeight && c.MemberWeight() != d.MemberWeight() {
			plan.Update = append(plan.Update, d)
		}
	}
	for _, c := range current {
		if ours(c) && !want[c.MemberKey()] {
			plan.Remove = append(plan.Remove, c)
		}
	}
	return plan
}

// MemberFields are one backend of a server group as both load balancer APIs
// describe it: a server (instance, ENI or address) on a port. A provider
// defines its member type on them and makes it a Member.
type MemberFields struct {
	// ServerID is the instance id, the ENI id, or the IP (NLB Ip
	// servers); IP is the server address (ENI and IP servers; informative
	// for an instance, whose address the cloud fills in); Type is the
	// server type as the API spells it.
	ServerID, IP, Type string
	// Port is the backend port (0 in an NLB any-port group).
	Port int32
	// Weight is 0–100.
	Weight int
	// Description marks the members a Service added (ownership in a
	// shared, vgroup-port bound group).
	Description string
}
