package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// relMember is a member of a fake group: only its description matters to
// ReleaseMembers.
type relMember struct{ key, desc string }

func (m relMember) MemberKey() string         { return m.key }
func (m relMember) MemberWeight() int         { return 100 }
func (m relMember) MemberDescription() string { return m.desc }

type relGroup struct{ id, name string }

// relCloud is a fake of the provider's two calls: it records them in
// order, as "read <id>" and "remove <id> <keys>".
type relCloud struct {
	members   map[string][]relMember
	readErr   map[string]error
	removeErr map[string]error
	calls     []string
}

func (c *relCloud) release() MemberRelease[relGroup, relMember] {
	return MemberRelease[relGroup, relMember]{
		Kind: "vServer group", Noun: "backends", Parse: naming.ParseCLB,
		Group: func(g relGroup) (string, string) { return g.id, g.name },
		Members: func(_ context.Context, id string) ([]relMember, error) {
			c.calls = append(c.calls, "read "+id)
			return c.members[id], c.readErr[id]
		},
		Remove: func(_ context.Context, id string, ms []relMember) error {
			var keys []string
			for _, m := range ms {
				keys = append(keys, m.key)
			}
			c.calls = append(c.calls, "remove "+id+" "+strings.Join(keys, ","))
			return c.removeErr[id]
		},
	}
}

func TestReleaseMembers(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1"}}
	self := IdentityOf(svc, "c1")
	ours := self.Ref.CLBVGroup("30080")
	notFound := &cloud.Error{Code: "InvalidParameter.VServerGroupId.NotFound", Class: cloud.ClassNotFound}
	boom := errors.New("boom")
	user := func(id string) relGroup { return relGroup{id, "my-group-" + id} }

	tests := []struct {
		name      string
		groups    []relGroup
		keep      map[string]bool
		members   map[string][]relMember
		readErr   map[string]error
		removeErr map[string]error
		calls     []string
		err       string
	}{{
		name:   "only the Service's members leave a user-made group",
		groups: []relGroup{user("g1")},
		members: map[string][]relMember{"g1": {
			{"mine", ours},
			{"other-service", naming.For(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default"}}, "c1").CLBVGroup("30080")},
			{"other-namespace", "k8s/30080/web/prod/c1"},
			{"other-cluster", "k8s/30080/web/default/c2"},
			{"user", "added by hand"},
			{"unmarked", ""},
		}},
		calls: []string{"read g1", "remove g1 mine"},
	}, {
		name:   "groups named after a Service and kept groups are not read",
		groups: []relGroup{{"named-ours", ours}, {"named-other", "k8s/30080/api/default/c1"}, user("kept"), user("g1")},
		keep:   map[string]bool{"kept": true},
		members: map[string][]relMember{
			"named-ours": {{"a", ours}}, "named-other": {{"b", ours}}, "kept": {{"c", ours}}, "g1": {{"d", ours}},
		},
		calls: []string{"read g1", "remove g1 d"},
	}, {
		name:    "no member of the Service: read, nothing removed",
		groups:  []relGroup{user("g1"), user("g2")},
		members: map[string][]relMember{"g1": {{"user", "by hand"}}},
		calls:   []string{"read g1", "read g2"},
	}, {
		name:    "each group's removal follows its read, in the order given",
		groups:  []relGroup{user("g2"), user("g1")},
		members: map[string][]relMember{"g1": {{"a", ours}, {"b", ours}}, "g2": {{"c", ours}}},
		calls:   []string{"read g2", "remove g2 c", "read g1", "remove g1 a,b"},
	}, {
		name:    "a group gone at its read is skipped",
		groups:  []relGroup{user("g1"), user("g2")},
		members: map[string][]relMember{"g1": {{"a", ours}}, "g2": {{"b", ours}}},
		readErr: map[string]error{"g1": fmt.Errorf("wrapped: %w", notFound)},
		calls:   []string{"read g1", "read g2", "remove g2 b"},
	}, {
		name:    "a failed read stops the release, its error naming the group",
		groups:  []relGroup{user("g1"), user("g2")},
		members: map[string][]relMember{"g2": {{"b", ours}}},
		readErr: map[string]error{"g1": boom},
		calls:   []string{"read g1"},
		err:     "read backends of vServer group g1: boom",
	}, {
		name:      "a group gone at its removal counts as released",
		groups:    []relGroup{user("g1"), user("g2")},
		members:   map[string][]relMember{"g1": {{"a", ours}}, "g2": {{"b", ours}}},
		removeErr: map[string]error{"g1": notFound},
		calls:     []string{"read g1", "remove g1 a", "read g2", "remove g2 b"},
	}, {
		name:      "a failed removal stops the release, its error naming the group",
		groups:    []relGroup{user("g1"), user("g2")},
		members:   map[string][]relMember{"g1": {{"a", ours}}, "g2": {{"b", ours}}},
		removeErr: map[string]error{"g1": boom},
		calls:     []string{"read g1", "remove g1 a"},
		err:       "remove backends from vServer group g1: boom",
	}, {
		name:  "no groups, no calls",
		calls: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &relCloud{members: tc.members, readErr: tc.readErr, removeErr: tc.removeErr}
			err := ReleaseMembers(context.Background(), self, tc.groups, tc.keep, c.release())
			if tc.err == "" && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			if tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if tc.err != "" && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the cause", err)
			}
			if !slices.Equal(c.calls, tc.calls) {
				t.Errorf("calls %q, want %q", c.calls, tc.calls)
			}
		})
	}
}
