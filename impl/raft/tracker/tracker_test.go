package tracker

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/raft/quorum"
)

func cfg(voters, learners, removed []uint64) Config {
	return Config{Voters: quorum.Majority(voters), Learners: learners, Removed: removed}
}

// TestApply runs every row of changeTable, and the last-voter rule.
func TestApply(t *testing.T) {
	base := cfg([]uint64{1, 2}, []uint64{3}, []uint64{4})
	for _, c := range []struct {
		ch   Change
		want string
		err  error
	}{
		{Change{AddLearner, 5}, "voters=(1 2) learners=(3 5) removed=(4)", nil},
		{Change{AddLearner, 1}, "", ErrMember},
		{Change{AddLearner, 3}, "", ErrMember},
		{Change{AddLearner, 4}, "", ErrRemovedID},
		{Change{Promote, 5}, "", ErrNotMember},
		{Change{Promote, 1}, "", ErrNotLearner},
		{Change{Promote, 3}, "voters=(1 2 3) removed=(4)", nil},
		{Change{Promote, 4}, "", ErrRemovedID},
		{Change{Remove, 5}, "", ErrNotMember},
		{Change{Remove, 1}, "voters=(2) learners=(3) removed=(1 4)", nil},
		{Change{Remove, 3}, "voters=(1 2) removed=(3 4)", nil},
		{Change{Remove, 4}, "", ErrRemovedID},
		{Change{Remove, 0}, "", ErrInvalidID},
		{Change{ChangeKind(9), 5}, "", ErrInvalidKind},
	} {
		got, err := base.Apply(c.ch)
		if !errors.Is(err, c.err) || (err == nil && got.String() != c.want) {
			t.Errorf("%v: %v, %v; want %s, %v", c.ch, got, err, c.want, c.err)
		}
		if err == nil {
			if d, ok := base.Diff(got); !ok || d != c.ch {
				t.Errorf("Diff after %v: %v %v", c.ch, d, ok)
			}
		}
	}
	if base.String() != "voters=(1 2) learners=(3) removed=(4)" {
		t.Errorf("Apply changed its receiver: %v", base)
	}
	if _, err := cfg([]uint64{1}, nil, nil).Apply(Change{Remove, 1}); !errors.Is(err, ErrLastVoter) {
		t.Errorf("removing the last voter: %v", err)
	}
	if _, ok := base.Diff(base); ok {
		t.Error("Diff of a configuration with itself")
	}
	if _, ok := base.Diff(cfg([]uint64{1, 2, 3, 5}, nil, []uint64{4})); ok {
		t.Error("Diff of two changes")
	}
}

func TestValid(t *testing.T) {
	for _, c := range []struct {
		c  Config
		ok bool
	}{
		{cfg([]uint64{1}, nil, nil), true},
		{cfg(nil, []uint64{1}, nil), false},
		{cfg([]uint64{1}, []uint64{1}, nil), false},
		{cfg([]uint64{1}, nil, []uint64{1}), false},
		{cfg([]uint64{1}, []uint64{2}, []uint64{2}), false},
		{cfg([]uint64{1}, []uint64{3, 2}, nil), false},
	} {
		if err := c.c.Valid(); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.c, err)
		}
	}
}

// TestTrackerLearners: learners get a progress but count for neither
// commit, nor votes, nor check-quorum, nor read rounds.
func TestTrackerLearners(t *testing.T) {
	tr := New(cfg([]uint64{1, 2, 3}, []uint64{4, 5}, nil))
	tr.StartLeading(7)
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
	if !tr.Get(4).Learner || tr.Get(2).Learner || tr.Get(4).Next != 7 {
		t.Fatalf("progress %+v %+v", tr.Get(4), tr.Get(2))
	}
	tr.Get(4).Match, tr.Get(5).Match, tr.Get(2).Match = 6, 6, 2
	if got := tr.Committed(1, 6); got != 2 {
		t.Errorf("committed %d with learners at 6, voter 2 at 2, self at 6: want 2", got)
	}
	tr.Get(4).RecentActive, tr.Get(5).RecentActive = true, true
	if tr.QuorumActive(1) {
		t.Error("learners made a quorum active")
	}
	tr.Get(4).Round, tr.Get(5).Round = 3, 3
	if tr.RoundConfirmed(1, 3) {
		t.Error("learners confirmed a read round")
	}
	tr.RecordVote(4, true)
	tr.RecordVote(5, true)
	tr.RecordVote(1, true)
	if g, r, res := tr.TallyVotes(); g != 1 || r != 0 || res != quorum.VotePending {
		t.Errorf("tally %d %d %v", g, r, res)
	}
	tr.RecordVote(2, true)
	tr.RecordVote(2, false) // the first answer counts
	if g, _, res := tr.TallyVotes(); g != 2 || res != quorum.VoteWon {
		t.Errorf("tally %d %v", g, res)
	}
	tr.ResetVotes()
	if g, r, _ := tr.TallyVotes(); g+r != 0 {
		t.Error("votes survive ResetVotes")
	}
}

func TestReconfigure(t *testing.T) {
	tr := New(cfg([]uint64{1, 2}, []uint64{3}, nil))
	if dropped := tr.Reconfigure(cfg([]uint64{1}, nil, []uint64{2}), 5); dropped != nil {
		t.Errorf("not leading, dropped %v", dropped)
	}
	tr.Reconfigure(cfg([]uint64{1, 2}, []uint64{3}, nil), 5)
	tr.StartLeading(5)
	tr.Get(3).Match = 4
	c, _ := tr.Config.Apply(Change{Promote, 3})
	tr.Reconfigure(c, 9)
	if pr := tr.Get(3); pr.Learner || pr.Match != 4 {
		t.Errorf("promoted learner's progress %+v", pr)
	}
	c, _ = c.Apply(Change{Remove, 2})
	c, _ = c.Apply(Change{AddLearner, 6})
	if dropped := tr.Reconfigure(c, 9); len(dropped) != 1 || dropped[0] != 2 {
		t.Errorf("dropped %v", dropped)
	}
	if pr := tr.Get(6); pr == nil || !pr.Learner || pr.Next != 9 || tr.Get(2) != nil {
		t.Errorf("after reconfigure: %+v, %+v", pr, tr.Get(2))
	}
	if err := tr.Check(); err != nil {
		t.Error(err)
	}
	tr.StopLeading()
	if err := tr.Check(); err != nil || tr.Leading() {
		t.Error(err)
	}
}

func TestProgressWindow(t *testing.T) {
	w := Window{MsgsMax: 2, BytesMax: 10}
	pr := &Progress{ID: 2, Next: 1}
	pr.BecomeReplicate()
	pr.Sent(3, 4, 3)
	pr.Sent(5, 4, 2)
	if !pr.Full(w) || !pr.Paused(w) || pr.Next != 6 {
		t.Fatalf("%+v", pr)
	}
	pr.FreeTo(4)
	if pr.Full(w) || len(pr.Inflights) != 1 || pr.InflightBytes != 4 {
		t.Fatalf("%+v", pr)
	}
	pr.BecomeProbe(3)
	pr.Sent(3, 0, 0)
	if !pr.Paused(w) || pr.Next != 3 {
		t.Fatalf("%+v", pr)
	}
	pr.BecomeSnapshot(9)
	if !pr.Paused(w) || pr.State.String() != "snapshot" {
		t.Fatalf("%+v", pr)
	}
}
