package tracker

import (
	"fmt"
	"slices"

	"github.com/durableraft/durableraft/impl/raft/quorum"
)

// Tracker is the configuration in force, the leader's progress of every
// member, and the votes of the election in progress.
//
// Invariants (Check):
//   - Config is valid.
//   - Progress is nil (not leading) or holds exactly one entry per member
//     of Config, keyed by its ID, with Learner set exactly for learners;
//     Order lists the same ids, sorted (a deterministic iteration order).
//   - votes holds only ids recorded since the last ResetVotes.
type Tracker struct {
	Config   Config
	Progress map[uint64]*Progress
	Order    []uint64

	votes map[uint64]bool
}

// New returns a tracker of c, not leading, with no votes.
func New(c Config) *Tracker {
	return &Tracker{Config: c, votes: map[uint64]bool{}}
}

// StartLeading gives every member a progress that probes from next.
func (t *Tracker) StartLeading(next uint64) {
	t.Progress, t.Order = map[uint64]*Progress{}, nil
	t.addMissing(next)
}

// StopLeading drops every progress.
func (t *Tracker) StopLeading() { t.Progress, t.Order = nil, nil }

// Leading reports whether progress is kept.
func (t *Tracker) Leading() bool { return t.Progress != nil }

// Reconfigure puts c in force. While leading, the progress of members that
// stay is kept, new members probe from next, and members no longer in c
// lose theirs. It returns the ids whose progress was dropped.
func (t *Tracker) Reconfigure(c Config, next uint64) (dropped []uint64) {
	t.Config = c
	if t.Progress == nil {
		return nil
	}
	for _, id := range t.Order {
		if !c.IsMember(id) {
			delete(t.Progress, id)
			dropped = append(dropped, id)
		}
	}
	t.Order = slices.DeleteFunc(t.Order, func(id uint64) bool { return !c.IsMember(id) })
	t.addMissing(next)
	return dropped
}

func (t *Tracker) addMissing(next uint64) {
	for _, id := range t.Config.Members() {
		pr, ok := t.Progress[id]
		if !ok {
			pr = &Progress{ID: id, Next: next}
			t.Progress[id] = pr
			t.Order = append(t.Order, id)
		}
		pr.Learner = t.Config.IsLearner(id)
	}
	slices.Sort(t.Order)
}

// Get is id's progress, or nil (not leading, or not a member).
func (t *Tracker) Get(id uint64) *Progress { return t.Progress[id] }

// Committed is the largest index a majority of the voters acknowledged,
// with self counted at selfIndex (the leader's durable index: it counts
// only what it holds durably) instead of its progress.
func (t *Tracker) Committed(self, selfIndex uint64) uint64 {
	return t.Config.Voters.CommittedIndex(func(id uint64) (uint64, bool) {
		if id == self {
			return selfIndex, true
		}
		if pr := t.Progress[id]; pr != nil {
			return pr.Match, true
		}
		return 0, false
	})
}

// QuorumActive reports whether a majority of the voters (self included)
// was heard from since the last reset of RecentActive.
func (t *Tracker) QuorumActive(self uint64) bool {
	return t.Config.Voters.IsQuorum(func(id uint64) bool {
		pr := t.Progress[id]
		return id == self || (pr != nil && pr.RecentActive)
	})
}

// RoundConfirmed reports whether a majority of the voters (self included)
// echoed read round r.
func (t *Tracker) RoundConfirmed(self, r uint64) bool {
	return t.Config.Voters.IsQuorum(func(id uint64) bool {
		pr := t.Progress[id]
		return id == self || (pr != nil && pr.Round >= r)
	})
}

// ResetVotes forgets the votes of the last election.
func (t *Tracker) ResetVotes() { clear(t.votes) }

// RecordVote records id's answer; the first answer of an id counts.
func (t *Tracker) RecordVote(id uint64, granted bool) {
	if _, ok := t.votes[id]; !ok {
		t.votes[id] = granted
	}
}

// TallyVotes counts the answers of the voters of the configuration in
// force (answers of others are kept but do not count) and says how the
// election stands.
func (t *Tracker) TallyVotes() (granted, rejected int, result quorum.VoteResult) {
	for _, id := range t.Config.Voters {
		if v, ok := t.votes[id]; ok {
			if v {
				granted++
			} else {
				rejected++
			}
		}
	}
	return granted, rejected, t.Config.Voters.VoteResult(t.votes)
}

// Check asserts the invariants.
func (t *Tracker) Check() error {
	if err := t.Config.Valid(); err != nil {
		return err
	}
	if t.Progress == nil {
		if t.Order != nil {
			return fmt.Errorf("tracker: order %v without progress", t.Order)
		}
		return nil
	}
	// Allocation-free (it runs after every input of the core).
	if len(t.Order) != len(t.Config.Voters)+len(t.Config.Learners) || len(t.Progress) != len(t.Order) {
		return fmt.Errorf("tracker: progress of %v for %v", t.Order, t.Config)
	}
	for k, id := range t.Order {
		pr := t.Progress[id]
		if (k > 0 && id <= t.Order[k-1]) || !t.Config.IsMember(id) || pr == nil || pr.ID != id || pr.Learner != t.Config.IsLearner(id) {
			return fmt.Errorf("tracker: progress of %d: %+v in %v", id, pr, t.Config)
		}
	}
	return nil
}
