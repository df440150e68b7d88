package service

import (
	"context"
	"fmt"

	"github.com/alicloud-ccm/alicloud-ccm/internal/ccm/naming"
	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

// MemberRelease is a provider's part in ReleaseMembers: how it names what
// the CCM makes, and its read and write of a group's members (G is its
// group as read, M its member).
type MemberRelease[G any, M Member] struct {
	// Kind names a group in errors ("vServer group"), Noun its members
	// ("backends").
	Kind, Noun string
	// Parse parses a group name or a member description as the provider
	// writes them (naming.ParseCLB, naming.ParseNLB).
	Parse func(string) (naming.Parsed, bool)
	// Group is a group's id and name.
	Group func(G) (id, name string)
	// Members reads a group's members.
	Members func(ctx context.Context, groupID string) ([]M, error)
	// Remove takes members out of a group, or queues the calls that will
	// (the provider then runs them); it is called only with members to
	// remove, and logs what it removes in the provider's words.
	Remove func(ctx context.Context, groupID string, members []M) error
}

// ReleaseMembers removes the Service's members (those whose description
// names self) from the user-made groups among groups it is no longer bound
// to (all but keep, by id), one group after the other: its read, then its
// removal when the Service has members there. A group named after a
// Service is skipped unread: a group the CCM made for any Service is never
// bindable, so the Service cannot have members there. A group that is gone
// (not found) has nothing left to release.
func ReleaseMembers[G any, M Member](ctx context.Context, self Identity, groups []G, keep map[string]bool, r MemberRelease[G, M]) error {
	for _, g := range groups {
		id, name := r.Group(g)
		if _, named := r.Parse(name); named || keep[id] {
			continue
		}
		cur, err := r.Members(ctx, id)
		if cloud.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s of %s %s: %w", r.Noun, r.Kind, id, err)
		}
		var mine []M
		for _, m := range cur {
			if p, ok := r.Parse(m.MemberDescription()); ok && self.IsSelf(p.Ref) {
				mine = append(mine, m)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if err := r.Remove(ctx, id, mine); err != nil && !cloud.IsNotFound(err) {
			return fmt.Errorf("remove %s from %s %s: %w", r.Noun, r.Kind, id, err)
		}
	}
	return nil
}
