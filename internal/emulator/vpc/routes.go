package vpc

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/api"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// Supported next hop types of custom routes.
const (
	NextHopInstance = "Instance"
	NextHopENI      = "NetworkInterface"
)

func errTaskConflict() *api.Error {
	return api.Errorf(http.StatusBadRequest, "TaskConflict", "The operation conflicts with other task, please try again later.")
}

func errTableNotFound(id string) *api.Error {
	return api.NotFound("InvalidRouteTableId.NotFound", "The specified route table %s does not exist.", id)
}

// codeEntryNotFound is the deletes' code for an unknown entry.
const codeEntryNotFound = "InvalidRouteEntry.NotFound"

func errEntryNotFound(what string) *api.Error {
	return api.NotFound(codeEntryNotFound, "The specified route entry %s does not exist.", what)
}

func asAPIError(err error) *api.Error {
	if e, ok := err.(*api.Error); ok {
		return e
	}
	return api.Errorf(http.StatusInternalServerError, "InternalError", "%v", err)
}

func (s *Service) sortedTables() []*RouteTable {
	return store.ByCreation(s.state.RouteTables, func(t *RouteTable) int64 { return t.Seq })
}

func (s *Service) sortedEntries() []*RouteEntry {
	return store.ByCreation(s.state.RouteEntries, func(e *RouteEntry) int64 { return e.Seq })
}

func (s *Service) regionTable(req *api.Request, id string) (*RouteTable, *api.Error) {
	t, ok := s.state.RouteTables[id]
	if !ok || t.RegionID != req.RegionID {
		return nil, errTableNotFound(id)
	}
	return t, nil
}

// routeStatus is computed from the entry's ReadyAt, so reads never mutate.
func routeStatus(e *RouteEntry, now time.Time) string {
	if now.Before(e.ReadyAt) {
		return "Pending"
	}
	return "Available"
}

// vpcBusy reports whether a route write in the table's VPC is still in flight.
func (s *Service) vpcBusy(t *RouteTable, now time.Time) bool {
	v, ok := s.state.VPCs[t.VpcID]
	return ok && now.Before(v.RouteBusyUntil)
}

func (s *Service) markBusy(vpcID string, now time.Time) {
	if v, ok := s.state.VPCs[vpcID]; ok {
		v.RouteBusyUntil = now.Add(s.st.Settings().Delay(store.DelayRouteEntry))
	}
}

// validateRoute applies the cloud's rules for a new custom route.
func (s *Service) validateRoute(t *RouteTable, dst, hopType, hopID string) (string, *api.Error) {
	var cidr string
	if isIPv6(dst) {
		p, aerr := s.validateRoute6(t, dst)
		if aerr != nil {
			return "", aerr
		}
		cidr = p.String()
	} else {
		p, ok := parseCIDR(dst, true)
		if !ok {
			return "", api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Malformed", "The specified destination CIDR block %q is not valid.", dst)
		}
		cidr = p.String()
		if within(p, cgnat) {
			return "", api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Overlapped", "The destination CIDR block %s must not be 100.64.0.0/10 or a subnet of it.", cidr)
		}
		for _, sw := range s.state.VSwitches {
			if sw.VpcID != t.VpcID {
				continue
			}
			if sp, ok := parseCIDR(sw.CIDRBlock, false); ok && within(p, sp) {
				return "", api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Overlapped", "The destination CIDR block %s must not equal or lie inside the CIDR block %s of vSwitch %s.", cidr, sw.CIDRBlock, sw.ID)
			}
		}
	}
	custom := 0
	for _, e := range s.state.RouteEntries {
		if e.TableID != t.ID {
			continue
		}
		if e.DestCIDR == cidr {
			return "", api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Duplicate", "The destination CIDR block %s already exists in route table %s.", cidr, t.ID)
		}
		if e.Type == TypeCustom {
			custom++
		}
	}
	if q := s.st.Settings().Quota(store.QuotaVPCCustomRoutesPerTable); custom >= q {
		return "", api.Errorf(http.StatusBadRequest, "QuotaExceeded", "The route table %s already has the maximum of %d custom route entries.", t.ID, q)
	}
	if hopID == "" {
		return "", api.MissingParameter("NextHopId")
	}
	var vpcID string
	var ok bool
	switch hopType {
	case NextHopInstance:
		vpcID, ok = s.instanceVPC(hopID)
	case NextHopENI:
		vpcID, ok = s.eniVPC(hopID)
	default:
		return "", api.InvalidParameter("NextHopType", "The next hop type %q is not supported by the emulator (supported: Instance, NetworkInterface).", hopType)
	}
	if !ok || vpcID != t.VpcID {
		return "", api.NotFound("InvalidNextHop.NotFound", "The specified next hop %s does not exist in VPC %s.", hopID, t.VpcID)
	}
	return cidr, nil
}

func (s *Service) addCustomRoute(t *RouteTable, cidr, hopType, hopID, name, desc string, now time.Time) *RouteEntry {
	id := store.NewID("rte")
	e := &RouteEntry{
		ID: id, TableID: t.ID, Name: name, Description: desc, DestCIDR: cidr, Type: TypeCustom,
		NextHopType: hopType, NextHopID: hopID, ModifiedAt: now, Seq: s.state.Next(),
		ReadyAt: now.Add(s.st.Settings().Delay(store.DelayRouteEntry)),
	}
	s.state.RouteEntries[id] = e
	return e
}

func (s *Service) createRouteEntry(req *api.Request) (map[string]any, error) {
	if out, done, err := s.state.Tokens.ReplayID(req, s.exists, "RouteEntryId"); done {
		return out, err
	}
	p := req.Params
	required, err := p.RequiredAll("RouteTableId", "DestinationCidrBlock")
	if err != nil {
		return nil, err
	}
	tableID, dst := required[0], required[1]
	hopType, hopID := p.String("NextHopType"), p.String("NextHopId")
	if hops := p.Objects("NextHopList"); len(hops) > 0 {
		return nil, api.InvalidParameter("NextHopList", "ECMP routes (NextHopList) are not supported by the emulator.")
	}
	if hopType == "" {
		hopType = NextHopInstance
	}
	t, aerr := s.regionTable(req, tableID)
	if aerr != nil {
		return nil, aerr
	}
	if s.vpcBusy(t, req.Now) {
		return nil, errTaskConflict()
	}
	cidr, aerr := s.validateRoute(t, dst, hopType, hopID)
	if aerr != nil {
		return nil, aerr
	}
	e := s.addCustomRoute(t, cidr, hopType, hopID, p.String("RouteEntryName"), p.String("Description"), req.Now)
	s.markBusy(t.VpcID, req.Now)
	s.state.Tokens.Remember(req, e.ID)
	return map[string]any{"RouteEntryId": e.ID}, nil
}

// routeEntryItems returns the RouteEntries.N of a batch call (verb is
// what the call does to them, for the message): at least one, at most the
// per-call quota.
func (s *Service) routeEntryItems(req *api.Request, verb string) ([]api.Params, error) {
	items := req.Params.Objects("RouteEntries")
	if len(items) == 0 {
		return nil, api.MissingParameter("RouteEntries")
	}
	if q := s.st.Settings().Quota(store.QuotaVPCRouteEntriesPerCall); len(items) > q {
		return nil, api.InvalidParameter("RouteEntries", "At most %d route entries may be %s in one call, got %d.", q, verb, len(items))
	}
	return items, nil
}

func (s *Service) createRouteEntries(req *api.Request) (map[string]any, error) {
	items, err := s.routeEntryItems(req, "created")
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if t, ok := s.state.RouteTables[it.String("RouteTableId")]; ok && t.RegionID == req.RegionID && s.vpcBusy(t, req.Now) {
			return nil, errTaskConflict()
		}
	}
	ids, failed := []string{}, []map[string]any{}
	touched := map[string]bool{}
	for _, it := range items {
		dst, hop, hopType := it.String("DstCidrBlock"), it.String("NextHop"), it.String("NextHopType")
		if hopType == "" {
			hopType = NextHopInstance
		}
		fail := func(e *api.Error) {
			failed = append(failed, map[string]any{"DstCidrBlock": dst, "NextHop": hop, "FailedCode": e.Code, "FailedMessage": e.Message})
		}
		tableID := it.String("RouteTableId")
		if tableID == "" {
			fail(api.MissingParameter("RouteTableId"))
			continue
		}
		if dst == "" {
			fail(api.MissingParameter("DstCidrBlock"))
			continue
		}
		t, aerr := s.regionTable(req, tableID)
		if aerr != nil {
			fail(aerr)
			continue
		}
		if aerr := checkIPVersion(it.String("IpVersion"), dst); aerr != nil {
			fail(aerr)
			continue
		}
		cidr, aerr := s.validateRoute(t, dst, hopType, hop)
		if aerr != nil {
			fail(aerr)
			continue
		}
		desc := it.String("Description")
		if desc == "" {
			desc = it.String("Describption")
		}
		e := s.addCustomRoute(t, cidr, hopType, hop, it.String("Name"), desc, req.Now)
		ids = append(ids, e.ID)
		touched[t.VpcID] = true
	}
	for id := range touched {
		s.markBusy(id, req.Now)
	}
	return map[string]any{"SuccessCount": len(ids), "FailedCount": len(failed), "RouteEntryIds": ids, "FailedRouteEntries": failed}, nil
}

// findEntry resolves an entry by id, or by table, destination and optional
// next hop, the two addressing modes of DeleteRouteEntry.
func (s *Service) findEntry(req *api.Request, entryID, tableID, dst, hop string) (*RouteEntry, *api.Error) {
	if entryID != "" {
		e, ok := s.state.RouteEntries[entryID]
		if !ok {
			return nil, errEntryNotFound(entryID)
		}
		if t, ok := s.state.RouteTables[e.TableID]; !ok || t.RegionID != req.RegionID || (tableID != "" && tableID != e.TableID) {
			return nil, errEntryNotFound(entryID)
		}
		return e, nil
	}
	if tableID == "" {
		return nil, api.MissingParameter("RouteEntryId")
	}
	if dst == "" {
		return nil, api.MissingParameter("DestinationCidrBlock")
	}
	if _, aerr := s.regionTable(req, tableID); aerr != nil {
		return nil, aerr
	}
	p, ok := parseDest(dst)
	if !ok {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidCIDRBlock.Malformed", "The specified destination CIDR block %q is not valid.", dst)
	}
	for _, e := range s.sortedEntries() {
		if e.TableID == tableID && e.DestCIDR == p.String() && (hop == "" || e.NextHopID == hop) {
			return e, nil
		}
	}
	return nil, errEntryNotFound(dst + " in " + tableID)
}

// removable checks whether an entry may be deleted now.
func (s *Service) removable(e *RouteEntry, now time.Time) *api.Error {
	if e.Type == TypeSystem {
		return api.Errorf(http.StatusBadRequest, "OperationDenied.SystemRouteEntry", "The system route entry %s cannot be deleted.", e.ID)
	}
	if routeStatus(e, now) != "Available" {
		return api.Errorf(http.StatusBadRequest, "IncorrectRouteEntryStatus", "The current status of route entry %s does not support this operation.", e.ID)
	}
	return nil
}

func (s *Service) deleteRouteEntry(req *api.Request) (map[string]any, error) {
	p := req.Params
	if len(p.Objects("NextHopList")) > 0 {
		return nil, api.InvalidParameter("NextHopList", "ECMP routes (NextHopList) are not supported by the emulator.")
	}
	e, aerr := s.findEntry(req, p.String("RouteEntryId"), p.String("RouteTableId"), p.String("DestinationCidrBlock"), p.String("NextHopId"))
	if aerr != nil {
		return nil, aerr
	}
	t := s.state.RouteTables[e.TableID]
	if e.Type != TypeSystem && s.vpcBusy(t, req.Now) {
		return nil, errTaskConflict()
	}
	if aerr := s.removable(e, req.Now); aerr != nil {
		return nil, aerr
	}
	delete(s.state.RouteEntries, e.ID)
	s.markBusy(t.VpcID, req.Now)
	return map[string]any{}, nil
}

func (s *Service) deleteRouteEntries(req *api.Request) (map[string]any, error) {
	items, err := s.routeEntryItems(req, "deleted")
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		tableID := it.String("RouteTableId")
		if e, ok := s.state.RouteEntries[it.String("RouteEntryId")]; ok {
			tableID = e.TableID
		}
		if t, ok := s.state.RouteTables[tableID]; ok && t.RegionID == req.RegionID && s.vpcBusy(t, req.Now) {
			return nil, errTaskConflict()
		}
	}
	success, failed := 0, []map[string]any{}
	touched := map[string]bool{}
	for _, it := range items {
		entryID, dst, hop := it.String("RouteEntryId"), it.String("DstCidrBlock"), it.String("NextHop")
		fail := func(e *api.Error) {
			failed = append(failed, map[string]any{"RouteEntryId": entryID, "DstCidrBlock": dst, "NextHop": hop, "FailedCode": e.Code, "FailedMessage": e.Message})
		}
		e, aerr := s.findEntry(req, entryID, it.String("RouteTableId"), dst, hop)
		if aerr != nil {
			fail(aerr)
			continue
		}
		if aerr := s.removable(e, req.Now); aerr != nil {
			fail(aerr)
			continue
		}
		touched[s.state.RouteTables[e.TableID].VpcID] = true
		delete(s.state.RouteEntries, e.ID)
		success++
	}
	for id := range touched {
		s.markBusy(id, req.Now)
	}
	return map[string]any{"SuccessCount": success, "FailedCount": len(failed), "FailedRouteEntries": failed}, nil
}

// validText applies the cloud's rule for a route entry's name and
// description: 1 to max characters, not starting with http:// or https://.
func validText(v string, max int) bool {
	n := utf8.RuneCountInString(v)
	return n >= 1 && n <= max && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://")
}

// modifyRouteEntry changes the name and description of a custom entry,
// addressed by RouteEntryId or by RouteTableId + DestinationCidrBlock. The
// entry keeps forwarding, so the VPC does not become busy; but the cloud
// refuses concurrent changes of one entry, so the entry itself is busy for
// the route delay, and any change is refused while the VPC runs a route task.
func (s *Service) modifyRouteEntry(req *api.Request) (map[string]any, error) {
	p := req.Params
	if p.String("NewNextHopId") != "" || p.String("NewNextHopType") != "" {
		return nil, api.InvalidParameter("NewNextHopId", "Changing the next hop (NewNextHopId, NewNextHopType) is not supported by the emulator.")
	}
	name, hasName := p.Get("RouteEntryName")
	if hasName && !validText(name, 128) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidRouteEntryName.Malformed", "Specified RouteEntry name is not valid.")
	}
	desc, hasDesc := p.Get("Description")
	if hasDesc && !validText(desc, 256) {
		return nil, api.Errorf(http.StatusBadRequest, "InvalidDescription.Malformed", "Specified description is not valid.")
	}
	entryID, tableID, dst := p.String("RouteEntryId"), p.String("RouteTableId"), p.String("DestinationCidrBlock")
	if entryID == "" && (tableID == "" || dst == "") {
		return nil, api.Errorf(http.StatusBadRequest, "MissingParam.RouteEntryId", "The parameter RouteEntryId, or RouteTableId and DestinationCidrBlock, is mandatory.")
	}
	e, aerr := s.findEntry(req, entryID, tableID, dst, "")
	if aerr != nil {
		if aerr.Code == codeEntryNotFound {
			// ModifyRouteEntry spells the code differently from the deletes, with status 400.
			return nil, api.Errorf(http.StatusBadRequest, "InvalidRouteEntryId.NotFound", "Specified RouteEntryId does not exist.")
		}
		return nil, aerr
	}
	if e.Type == TypeSystem {
		return nil, api.Errorf(http.StatusBadRequest, "OperationDenied.SystemRouteEntry", "The system route entry %s cannot be modified.", e.ID)
	}
	// A Pending entry is reported as such, though its creation also keeps
	// the VPC busy: the entry's own state is the more specific answer.
	if routeStatus(e, req.Now) != "Available" {
		return nil, api.Errorf(http.StatusBadRequest, "IncorrectRouteEntryStatus", "The current status of route entry %s does not support this operation.", e.ID)
	}
	if s.vpcBusy(s.state.RouteTables[e.TableID], req.Now) || req.Now.Before(e.ModifyBusyUntil) {
		return nil, errTaskConflict()
	}
	if hasName {
		e.Name = name
	}
	if hasDesc {
		e.Description = desc
	}
	e.ModifiedAt = req.Now
	e.ModifyBusyUntil = req.Now.Add(s.st.Settings().Delay(store.DelayRouteEntry))
	return map[string]any{}, nil
}

func (s *Service) describeRouteTableList(req *api.Request) (map[string]any, error) {
	p := req.Params
	vpcID, routerID, tableID, name := p.String("VpcId"), p.String("RouterId"), p.String("RouteTableId"), p.String("RouteTableName")
	routerType, err := p.Enum("RouterType", "", "VRouter", "VBR")
	if err != nil {
		return nil, err
	}
	tableType, err := p.Enum("RouteTableType", "", TypeSystem, TypeCustom)
	if err != nil {
		return nil, err
	}
	var list []*RouteTable
	for _, t := range s.sortedTables() {
		if t.RegionID != req.RegionID || (vpcID != "" && t.VpcID != vpcID) || (routerID != "" && t.VRouterID != routerID) ||
			(tableID != "" && t.ID != tableID) || (name != "" && t.Name != name) || routerType == "VBR" ||
			(tableType != "" && t.Type != tableType) {
			continue
		}
		list = append(list, t)
	}
	out, err := pageAnswer(p, list, 50, "RouterTableList", "RouterTableListType", func(t *RouteTable) map[string]any {
		vsws := []string{}
		for _, sw := range s.sortedVSwitches() {
			if sw.RouteTableID == t.ID {
				vsws = append(vsws, sw.ID)
			}
		}
		return map[string]any{
			"RouteTableId": t.ID, "RouteTableName": t.Name, "RouteTableType": t.Type, "RouterId": t.VRouterID,
			"RouterType": "VRouter", "VpcId": t.VpcID, "Status": "Available", "CreationTime": vpcTime(t.CreatedAt),
			"AssociateType": "VSwitch", "OwnerId": 1234567890123456, "Description": "",
			"VSwitchIds": map[string]any{"VSwitchId": vsws},
			"GatewayIds": map[string]any{"GatewayIds": []string{}},
			"Tags":       map[string]any{"Tag": []any{}},
		}
	})
	if err != nil {
		return nil, err
	}
	out["Success"], out["Code"], out["Message"] = true, "200", "successful"
	return out, nil
}

func (s *Service) entryView(e *RouteEntry, region string, now time.Time) map[string]any {
	hop := map[string]any{"NextHopId": e.NextHopID, "NextHopType": e.NextHopType, "NextHopRegionId": region, "Enabled": 1, "Weight": 0}
	if e.Type == TypeCustom {
		hop["NextHopRelatedInfo"] = map[string]any{"InstanceId": e.NextHopID, "InstanceType": e.NextHopType, "RegionId": region}
	}
	origin := "CustomRoute"
	if e.Type == TypeSystem {
		origin = "SystemRoute"
	}
	return map[string]any{
		"RouteEntryId": e.ID, "RouteEntryName": e.Name, "RouteTableId": e.TableID, "DestinationCidrBlock": e.DestCIDR,
		"Type": e.Type, "Status": routeStatus(e, now), "IpVersion": ipVersion(e.DestCIDR), "Description": e.Description,
		"GmtModified": vpcTime(e.ModifiedAt), "Origin": origin, "NextHopType": e.NextHopType, "InstanceId": e.NextHopID,
		"NextHops": map[string]any{"NextHop": []any{hop}},
	}
}

func (s *Service) describeRouteEntryList(req *api.Request) (map[string]any, error) {
	p := req.Params
	tableID, err := p.Required("RouteTableId")
	if err != nil {
		return nil, err
	}
	t, aerr := s.regionTable(req, tableID)
	if aerr != nil {
		return nil, aerr
	}
	entryType, err := p.Enum("RouteEntryType", "", TypeCustom, TypeSystem, "BGP", "CEN", "ECR")
	if err != nil {
		return nil, err
	}
	dst := p.String("DestinationCidrBlock")
	if dst != "" {
		if pp, ok := parseDest(dst); ok {
			dst = pp.String()
		}
	}
	dsts := p.List("DestCidrBlockList")
	hopID, hopType, entryID, name := p.String("NextHopId"), p.String("NextHopType"), p.String("RouteEntryId"), p.String("RouteEntryName")
	var list []*RouteEntry
	for _, e := range s.sortedEntries() {
		if e.TableID != t.ID || (entryType != "" && e.Type != entryType) || (dst != "" && e.DestCIDR != dst) ||
			(len(dsts) > 0 && !slices.Contains(dsts, e.DestCIDR)) || (hopID != "" && e.NextHopID != hopID) ||
			(hopType != "" && e.NextHopType != hopType) || (entryID != "" && e.ID != entryID) || (name != "" && e.Name != name) {
			continue
		}
		list = append(list, e)
	}
	// Documented as at most 100, yet the cloud serves the 500 the existing CCM asks for.
	list, keys := api.SortByKey(list, func(e *RouteEntry) string { return api.SeqKey(e.Seq) })
	_, start, end, next, err := p.Cursor(keys, 10, 500, "MaxResult")
	if err != nil {
		return nil, err
	}
	items := []map[string]any{}
	for _, e := range list[start:end] {
		items = append(items, s.entryView(e, t.RegionID, req.Now))
	}
	return map[string]any{"RouteEntrys": map[string]any{"RouteEntry": items}, "NextToken": next}, nil
}
