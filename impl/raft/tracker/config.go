package tracker

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/durableraft/durableraft/impl/raft/quorum"
)

// Config is a membership configuration.
//
// Invariants (Valid): Voters is a valid quorum.Majority with at least one
// voter; Learners and Removed are sorted, without repeats or 0; the three
// sets are pairwise disjoint (a removed id is never a member again).
type Config struct {
	Voters   quorum.Majority
	Learners []uint64
	Removed  []uint64
}

// Errors of Apply: a change that is not one of the single-server changes
// from this configuration.
var (
	ErrRemovedID   = errors.New("tracker: the id was removed from the cluster and is never reused")
	ErrMember      = errors.New("tracker: already a member")
	ErrNotMember   = errors.New("tracker: not a member")
	ErrNotLearner  = errors.New("tracker: not a learner (only a learner is promoted)")
	ErrLastVoter   = errors.New("tracker: the last voter cannot be removed")
	ErrInvalidID   = errors.New("tracker: id 0 is nobody")
	ErrInvalidKind = errors.New("tracker: unknown kind of change")
)

func sortedIDs(ids []uint64) error {
	for k, id := range ids {
		if id == 0 || (k > 0 && id <= ids[k-1]) {
			return fmt.Errorf("ids %v: not sorted, repeated or 0", ids)
		}
	}
	return nil
}

// Valid checks the invariants.
func (c Config) Valid() error {
	if len(c.Voters) == 0 {
		return errors.New("tracker: configuration without voters")
	}
	if err := c.Voters.Valid(); err != nil {
		return err
	}
	for _, l := range [][]uint64{c.Learners, c.Removed} {
		if err := sortedIDs(l); err != nil {
			return fmt.Errorf("tracker: %w", err)
		}
	}
	for _, id := range c.Learners {
		if c.Voters.Has(id) || has(c.Removed, id) {
			return fmt.Errorf("tracker: learner %d is also a voter or removed", id)
		}
	}
	for _, id := range c.Removed {
		if c.Voters.Has(id) {
			return fmt.Errorf("tracker: voter %d is also removed", id)
		}
	}
	return nil
}

func has(ids []uint64, id uint64) bool {
	_, ok := slices.BinarySearch(ids, id)
	return ok
}

func with(ids []uint64, id uint64) []uint64 {
	out := append(slices.Clone(ids), id)
	slices.Sort(out)
	return out
}

func without(ids []uint64, id uint64) []uint64 {
	return slices.DeleteFunc(slices.Clone(ids), func(x uint64) bool { return x == id })
}

// IsVoter, IsLearner, IsMember and WasRemoved classify an id.
func (c Config) IsVoter(id uint64) bool    { return c.Voters.Has(id) }
func (c Config) IsLearner(id uint64) bool  { return has(c.Learners, id) }
func (c Config) IsMember(id uint64) bool   { return c.IsVoter(id) || c.IsLearner(id) }
func (c Config) WasRemoved(id uint64) bool { return has(c.Removed, id) }

// Members is the voters and the learners, sorted.
func (c Config) Members() []uint64 {
	out := append(slices.Clone([]uint64(c.Voters)), c.Learners...)
	slices.Sort(out)
	return out
}

// Clone is a deep copy.
func (c Config) Clone() Config {
	return Config{Voters: slices.Clone(c.Voters), Learners: slices.Clone(c.Learners), Removed: slices.Clone(c.Removed)}
}

// Equal reports whether two configurations are the same.
func (c Config) Equal(o Config) bool {
	return slices.Equal(c.Voters, o.Voters) && slices.Equal(c.Learners, o.Learners) && slices.Equal(c.Removed, o.Removed)
}

func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "voters=%v", c.Voters)
	if len(c.Learners) > 0 {
		fmt.Fprintf(&b, " learners=%v", quorum.Majority(c.Learners))
	}
	if len(c.Removed) > 0 {
		fmt.Fprintf(&b, " removed=%v", quorum.Majority(c.Removed))
	}
	return b.String()
}

// ChangeKind is a kind of single-server change.
type ChangeKind uint8

// The changes (docs/membership.md): a new id joins as a learner; a learner
// becomes a voter; a member (voter or learner) leaves, and its id is
// removed for good.
const (
	AddLearner ChangeKind = iota + 1
	Promote
	Remove
)

func (k ChangeKind) String() string {
	switch k {
	case AddLearner:
		return "add-learner"
	case Promote:
		return "promote"
	case Remove:
		return "remove"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change is one single-server change.
type Change struct {
	Kind ChangeKind
	ID   uint64
}

func (ch Change) String() string { return fmt.Sprintf("%v %d", ch.Kind, ch.ID) }

// changeRule is one row of the decision table of Apply: what a change of
// kind does to an id in the given situation. err nil: allowed.
type changeRule struct {
	kind                 ChangeKind
	voter, learner, gone bool // the id's situation (none set: never a member)
	err                  error
}

// changeTable is Apply's decision table: every kind against every
// situation of the id. A voter's removal is also refused when it is the
// last voter (Apply).
var changeTable = []changeRule{
	{AddLearner, false, false, false, nil},
	{AddLearner, true, false, false, ErrMember},
	{AddLearner, false, true, false, ErrMember},
	{AddLearner, false, false, true, ErrRemovedID},
	{Promote, false, false, false, ErrNotMember},
	{Promote, true, false, false, ErrNotLearner},
	{Promote, false, true, false, nil},
	{Promote, false, false, true, ErrRemovedID},
	{Remove, false, false, false, ErrNotMember},
	{Remove, true, false, false, nil},
	{Remove, false, true, false, nil},
	{Remove, false, false, true, ErrRemovedID},
}

// Apply is the configuration after the single-server change ch, or why ch
// is not one from c (changeTable). c is not modified.
func (c Config) Apply(ch Change) (Config, error) {
	if ch.ID == 0 {
		return Config{}, ErrInvalidID
	}
	voter, learner, gone := c.IsVoter(ch.ID), c.IsLearner(ch.ID), c.WasRemoved(ch.ID)
	var rule *changeRule
	for k := range changeTable {
		r := &changeTable[k]
		if r.kind == ch.Kind && r.voter == voter && r.learner == learner && r.gone == gone {
			rule = r
		}
	}
	switch {
	case rule == nil:
		return Config{}, fmt.Errorf("%w: %v", ErrInvalidKind, ch)
	case rule.err != nil:
		return Config{}, fmt.Errorf("%v: %w", ch, rule.err)
	case ch.Kind == Remove && voter && len(c.Voters) == 1:
		return Config{}, fmt.Errorf("%v: %w", ch, ErrLastVoter)
	}
	n := c.Clone()
	switch ch.Kind {
	case AddLearner:
		n.Learners = with(n.Learners, ch.ID)
	case Promote:
		n.Learners = without(n.Learners, ch.ID)
		n.Voters = quorum.Majority(with(n.Voters, ch.ID))
	case Remove:
		n.Voters = quorum.Majority(without(n.Voters, ch.ID))
		n.Learners = without(n.Learners, ch.ID)
		n.Removed = with(n.Removed, ch.ID)
	}
	if err := n.Valid(); err != nil {
		panic(fmt.Sprintf("tracker: %v from %v gave an invalid configuration: %v", ch, c, err))
	}
	return n, nil
}
