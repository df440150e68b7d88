// Package plan is the `plan` command's core: it drives the service and
// route controllers' own passes once, over a cloud client whose transport
// records every write instead of sending it (cloud.Recorder) and a
// Kubernetes client that does the same, and reports those writes per
// Service and per Node.
//
// The writes are the controllers' requests as they would have been sent,
// not a second derivation of them: the providers decide and write in one
// pass (attributes, tags, ACLs, certificates and security groups are
// written where they are compared), so only their own code can say what
// they write. A create is answered with a placeholder id ("<new
// LoadBalancer>"), so the writes that depend on it (groups, listeners)
// are listed too.
package plan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/klog/v2"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/routes"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// Exit codes of the plan command.
const (
	// ExitNoWrites: the controllers would write nothing to the cloud.
	ExitNoWrites = 0
	// ExitError: the plan could not be made.
	ExitError = 1
	// ExitWrites: the controllers would write to the cloud.
	ExitWrites = 2
)

// CloudWrite is one cloud API write a controller would make.
type CloudWrite struct {
	// Product is ecs, vpc, slb or nlb.
	Product string `json:"product"`
	// Action is the API action.
	Action string `json:"action"`
	// Fields are the parameters it would send (envelope left out): for an
	// update, the fields it changes.
	Fields map[string]string `json:"fields"`
	// Creates is the placeholder id of what a create would make, which
	// later writes of the same item name.
	Creates string `json:"creates,omitempty"`
}

// KubeWrite is one Kubernetes API write a controller would make.
type KubeWrite struct {
	// Verb is the HTTP method (PATCH, PUT, POST, DELETE).
	Verb string `json:"verb"`
	// Path is the API path written to.
	Path string `json:"path"`
	// Body is the request body, e.g. the patch.
	Body string `json:"body,omitempty"`
}

// Item is what one Service or one Node's routes would get.
type Item struct {
	// Kind is "Service" or "Node".
	Kind string `json:"kind"`
	// Name is namespace/name of a Service, the name of a Node.
	Name string `json:"name"`
	// Cloud are the cloud writes, in the order they would be made.
	Cloud []CloudWrite `json:"cloud"`
	// Kubernetes are the Kubernetes writes (finalizer, labels, status,
	// pod readiness conditions, Node conditions).
	Kubernetes []KubeWrite `json:"kubernetes"`
	// Warnings are the Warning events the pass would record.
	Warnings []string `json:"warnings,omitempty"`
	// Error is why the pass stopped (the writes listed are those before).
	Error string `json:"error,omitempty"`
}

// Report is the whole plan.
type Report struct {
	// Items are the Services, then the Nodes whose routes would change.
	Items []Item `json:"items"`
	// CloudWrites counts the cloud writes of all items.
	CloudWrites int `json:"cloudWrites"`
	// KubeWrites counts the Kubernetes writes of all items.
	KubeWrites int `json:"kubernetesWrites"`
	// Errors counts the items whose pass failed.
	Errors int `json:"errors"`
	// StricterPolicy is the reuse policy (cloud-config loadBalancerReuse)
	// the Services were also evaluated under ("" when not).
	StricterPolicy string `json:"stricterPolicy,omitempty"`
	// WouldRefuse are the Services StricterPolicy would refuse.
	WouldRefuse []Refusal `json:"wouldRefuse,omitempty"`
}

// Refusal is a Service a stricter reuse policy would refuse, and why.
type Refusal struct {
	// Service is namespace/name.
	Service string `json:"service"`
	// Reason is the refusal's message (or why it could not be evaluated).
	Reason string `json:"reason"`
}

// ExitCode is the command's exit code for r: errors first, then writes.
func (r *Report) ExitCode() int {
	switch {
	case r.Errors > 0:
		return ExitError
	case r.CloudWrites > 0:
		// Kubernetes writes are listed, not counted: after a switch they
		// are the CCM's own bookkeeping (its hash and backends labels),
		// which changes nothing a user sees, and a pre-upgrade check that
		// always said "writes" would teach people to ignore it.
		return ExitWrites
	}
	return ExitNoWrites
}

func (r *Report) add(it Item) {
	// Empty lists, not null, for JSON readers.
	if it.Cloud == nil {
		it.Cloud = []CloudWrite{}
	}
	if it.Kubernetes == nil {
		it.Kubernetes = []KubeWrite{}
	}
	r.Items = append(r.Items, it)
	r.CloudWrites += len(it.Cloud)
	r.KubeWrites += len(it.Kubernetes)
	if it.Error != "" {
		r.Errors++
	}
}

// AllNodes names the item of a route pass that would write nothing.
const AllNodes = "(all)"

// Services is the service controller as the plan drives it.
type Services interface {
	// WaitForCacheSync waits for the informers.
	WaitForCacheSync(ctx context.Context) bool
	// Keys lists the Services to sync.
	Keys() ([]string, error)
	// SyncFull runs one full sync of a Service.
	SyncFull(ctx context.Context, key string) error
}

// Stricter is implemented by a service controller that can say which
// Services a stricter reuse policy would refuse, reading only.
type Stricter interface {
	// WouldRefuse is why the Service of key would be refused under
	// policy, "" when it would not be (or is refused already).
	WouldRefuse(ctx context.Context, key, policy string) (string, error)
}

// Routes is the route controller as the plan drives it.
type Routes interface {
	// WaitForCacheSync waits for the Node informer.
	WaitForCacheSync(ctx context.Context) bool
	// ReconcileOnce runs one pass over every route table.
	ReconcileOnce(ctx context.Context) error
}

// Options are what Run drives and where it finds the writes.
type Options struct {
	// Services is the service controller (nil: Services are not planned).
	Services Services
	// Routes is the route controller (nil: routes are not planned).
	Routes Routes
	// Cloud records the cloud writes of both.
	Cloud *cloud.Recorder
	// Kube records their Kubernetes writes.
	Kube *KubeRecorder
	// Events collects their Warning events.
	Events *Events
	// ClusterID reads the Node out of a route entry's Description.
	ClusterID string
	// NodeOfInstance maps an ECS instance id to its Node, for route
	// entries whose Description names none.
	NodeOfInstance func(instanceID string) string
	// StricterPolicy, when set and Services is a Stricter, is a reuse
	// policy stricter than the cluster's under which every Service is
	// evaluated too, so an administrator sees what switching would refuse.
	StricterPolicy string
}

// Run drives one pass of each controller, one Service at a time so that
// each write is told apart by the item it was made for.
func Run(ctx context.Context, o Options) (*Report, error) {
	// The controllers log what they do ("Created load balancer"); under
	// plan every such line is marked, so the log never reads as a write
	// that was made.
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("dryRun", true))
	r := &Report{}
	if o.Services != nil {
		if !o.Services.WaitForCacheSync(ctx) {
			return nil, errors.New("plan: the Service, Node and EndpointSlice caches did not sync")
		}
		keys, err := o.Services.Keys()
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		sort.Strings(keys)
		stricter, _ := o.Services.(Stricter)
		if stricter != nil && o.StricterPolicy != "" {
			r.StricterPolicy = o.StricterPolicy
		}
		for _, key := range keys {
			err := o.Services.SyncFull(ctx, key)
			it := Item{Kind: "Service", Name: key, Cloud: cloudWrites(o.Cloud.Take()), Kubernetes: o.Kube.Take(), Warnings: o.Events.Take()}
			if err != nil {
				klog.ErrorS(err, "Planning a Service failed", "service", key)
				it.Error = err.Error()
			}
			r.add(it)
			if r.StricterPolicy == "" {
				continue
			}
			why, err := stricter.WouldRefuse(ctx, key, o.StricterPolicy)
			if err != nil {
				why = fmt.Sprintf("could not be evaluated: %v", err)
			}
			if why != "" {
				r.WouldRefuse = append(r.WouldRefuse, Refusal{Service: key, Reason: why})
			}
		}
	}
	if o.Routes != nil {
		if !o.Routes.WaitForCacheSync(ctx) {
			return nil, errors.New("plan: the Node cache did not sync")
		}
		err := o.Routes.ReconcileOnce(ctx)
		items := o.byNode(o.Cloud.Take(), o.Kube.Take(), o.Events.Take())
		if len(items) == 0 && err == nil {
			// Say that routes were checked, not left out.
			items = append(items, Item{Kind: "Node", Name: AllNodes})
		}
		for _, it := range items {
			r.add(it)
		}
		if err != nil {
			klog.ErrorS(err, "Planning routes failed")
			r.add(Item{Kind: "Node", Name: "(route tables)", Error: err.Error()})
		}
	}
	return r, nil
}

func cloudWrites(ws []cloud.RecordedWrite) []CloudWrite {
	out := make([]CloudWrite, 0, len(ws))
	for _, w := range ws {
		out = append(out, CloudWrite{Product: string(w.Product), Action: w.Action, Fields: w.Params, Creates: w.Created})
	}
	return out
}

// entriesPrefix starts the parameters of the VPC route writes that take
// several entries (RouteEntries.N.Field).
const entriesPrefix = "RouteEntries."

// byNode splits the route pass's writes per Node: a batch write into one
// write per entry, each under the Node its Description or next hop names.
func (o Options) byNode(ws []cloud.RecordedWrite, kube []KubeWrite, warnings []string) []Item {
	items := map[string]*Item{}
	at := func(node string) *Item {
		if node == "" {
			node = "(unknown node)"
		}
		if items[node] == nil {
			items[node] = &Item{Kind: "Node", Name: node}
		}
		return items[node]
	}
	for _, w := range ws {
		for _, fields := range SplitEntries(w.Params) {
			it := at(o.nodeOf(fields))
			it.Cloud = append(it.Cloud, CloudWrite{Product: string(w.Product), Action: w.Action, Fields: fields, Creates: w.Created})
		}
	}
	for _, k := range kube {
		name := "(unknown node)"
		if rest, ok := strings.CutPrefix(k.Path, "/api/v1/nodes/"); ok {
			name, _, _ = strings.Cut(rest, "/")
		}
		it := at(name)
		it.Kubernetes = append(it.Kubernetes, k)
	}
	var names []string
	for n := range items {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Item, 0, len(names))
	for _, n := range names {
		out = append(out, *items[n])
	}
	if len(warnings) > 0 {
		out = append(out, Item{Kind: "Node", Name: "(route warnings)", Warnings: warnings})
	}
	return out
}

// SplitEntries turns RouteEntries.N.Field parameters of a batch route
// write into one field set per N, in N order (the other parameters copied
// into each), as the plan lists them; a write without them is one set.
func SplitEntries(params map[string]string) []map[string]string {
	common := map[string]string{}
	per := map[string]map[string]string{}
	for k, v := range params {
		rest, ok := strings.CutPrefix(k, entriesPrefix)
		n, field, ok2 := strings.Cut(rest, ".")
		if !ok || !ok2 {
			common[k] = v
			continue
		}
		if per[n] == nil {
			per[n] = map[string]string{}
		}
		per[n][field] = v
	}
	if len(per) == 0 {
		return []map[string]string{common}
	}
	keys := make([]string, 0, len(per))
	for n := range per {
		keys = append(keys, n)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j])
		}
		return keys[i] < keys[j]
	})
	out := make([]map[string]string, 0, len(keys))
	for _, n := range keys {
		for k, v := range common {
			per[n][k] = v
		}
		out = append(out, per[n])
	}
	return out
}

// nodeOf names the Node a route write is for: the marker in its
// Description, else the Node of its next hop instance.
func (o Options) nodeOf(fields map[string]string) string {
	for _, k := range []string{"Description", "Describption"} {
		if cid, node, ok := routes.ParseMarker(fields[k]); ok && cid == o.ClusterID {
			return node
		}
	}
	if o.NodeOfInstance != nil {
		for _, k := range []string{"NextHop", "NextHopId"} {
			if n := o.NodeOfInstance(fields[k]); n != "" {
				return n
			}
		}
	}
	return ""
}
