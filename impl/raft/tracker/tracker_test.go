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
	}
	if base.String() != "voters=(1 2) learners=(3) removed=(4)" {
		t.Errorf("Apply changed its receiver: %v", base)
	}
	if _, err := cfg([]uint64{1}, nil, nil).Apply(Change{Remove, 1}); !errors.Is(err, ErrLastVoter) {
		t.Errorf("removing the last voter: %v", err)
	}
}

// TestEqual: each of the three sets counts.
func TestEqual(t *testing.T) {
	base := cfg([]uint64{1, 2}, []uint64{3}, []uint64{4})
	for _, c := range []struct {
		o    Config
		want bool
	}{
		{cfg([]uint64{1, 2}, []uint64{3}, []uint64{4}), true},
		{cfg([]uint64{1, 5}, []uint64{3}, []uint64{4}), false},
		{cfg([]uint64{1, 2}, nil, []uint64{4}), false},
		{cfg([]uint64{1, 2}, []uint64{3}, []uint64{4, 6}), false},
	} {
		if got := base.Equal(c.o); got != c.want {
			t.Errorf("%v.Equal(%v) = %v", base, c.o, got)
		}
		if got := c.o.Equal(base); got != c.want {
			t.Errorf("%v.Equal(%v) = %v", c.o, base, got)
		}
	}
	if !base.Equal(base.Clone()) {
		t.Error("a clone differs")
	}
}

func TestChangeKindString(t *testing.T) {
	for k, want := range map[ChangeKind]string{AddLearner: "add-learner", Promote: "promote", Remove: "remove", 0: "ChangeKind(0)", 9: "ChangeKind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("ChangeKind(%d).String() = %q, want %q", uint8(k), got, want)
		}
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
		{cfg([]uint64{1}, []uint64{2, 2}, nil), false},
		{cfg([]uint64{1}, []uint64{0, 2}, nil), false},
		{cfg([]uint64{1}, nil, []uint64{0}), false},
		{cfg([]uint64{1}, nil, []uint64{3, 3}), false},
		{cfg([]uint64{1, 2}, []uint64{3, 4}, []uint64{5, 6}), true},
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

// TestTrackerCheck: Check refuses each way a tracker can break its
// invariants.
func TestTrackerCheck(t *testing.T) {
	leading := func() *Tracker {
		tr := New(cfg([]uint64{1, 2}, []uint64{3}, nil))
		tr.StartLeading(4)
		return tr
	}
	for _, c := range []struct {
		name    string
		breakIt func(*Tracker)
	}{
		{"an invalid configuration", func(tr *Tracker) { tr.Config.Voters = nil }},
		{"an invalid configuration, progress as it says", func(tr *Tracker) { tr.Config.Removed = []uint64{3} }},
		{"an id twice in the order", func(tr *Tracker) { tr.Order[2] = tr.Order[1] }},
		{"a member without progress, a stranger with one", func(tr *Tracker) {
			delete(tr.Progress, 2)
			tr.Progress[9] = &Progress{ID: 9}
		}},
		{"an order without progress", func(tr *Tracker) { tr.Progress = nil }},
		{"an order shorter than the members", func(tr *Tracker) { tr.Order = tr.Order[:2] }},
		{"a progress too many", func(tr *Tracker) { tr.Progress[9] = &Progress{ID: 9} }},
		{"a progress missing", func(tr *Tracker) { delete(tr.Progress, 2) }},
		{"a member neither in the order nor in progress", func(tr *Tracker) {
			tr.Order = tr.Order[:2]
			delete(tr.Progress, 3)
		}},
		{"an order unsorted", func(tr *Tracker) { tr.Order[0], tr.Order[1] = tr.Order[1], tr.Order[0] }},
		{"a non-member in the order", func(tr *Tracker) {
			tr.Order[2] = 9
			tr.Progress[9] = &Progress{ID: 9}
			delete(tr.Progress, 3)
		}},
		{"a progress under another id", func(tr *Tracker) { tr.Progress[2].ID = 7 }},
		{"a learner's progress not marked", func(tr *Tracker) { tr.Progress[3].Learner = false }},
		{"a voter's progress marked learner", func(tr *Tracker) { tr.Progress[1].Learner = true }},
	} {
		tr := leading()
		if err := tr.Check(); err != nil {
			t.Fatalf("%s: the tracker before: %v", c.name, err)
		}
		c.breakIt(tr)
		if err := tr.Check(); err == nil {
			t.Errorf("%s: Check passed", c.name)
		}
	}
	if err := New(cfg([]uint64{1}, nil, nil)).Check(); err != nil {
		t.Errorf("a tracker not leading: %v", err)
	}
}

// TestTrackerSelfCounts: the leader counts itself in check-quorum and read
// rounds whatever its own progress says; a voter without a progress (not
// leading) counts as silent.
func TestTrackerSelfCounts(t *testing.T) {
	tr := New(cfg([]uint64{1, 2, 3}, nil, nil))
	if tr.QuorumActive(1) || tr.RoundConfirmed(1, 1) {
		t.Error("not leading: a quorum without anyone heard from")
	}
	tr.StartLeading(1)
	tr.Get(2).RecentActive, tr.Get(2).Round = true, 3
	if !tr.QuorumActive(1) {
		t.Error("self and 2 active: no quorum")
	}
	if !tr.RoundConfirmed(1, 3) || tr.RoundConfirmed(1, 4) {
		t.Error("self and 2 at round 3: confirmed wrong")
	}
}

// TestProgressWindowBounds: BytesMax 0 bounds nothing; the bytes bound is
// reached at BytesMax exactly; an AppendEntries without entries is not in
// flight.
func TestProgressWindowBounds(t *testing.T) {
	pr := &Progress{ID: 2, Next: 1}
	pr.BecomeReplicate()
	pr.Sent(1, 100, 1)
	if pr.Full(Window{MsgsMax: 5}) {
		t.Error("BytesMax 0 bounded the bytes")
	}
	if !pr.Full(Window{MsgsMax: 5, BytesMax: 100}) || pr.Full(Window{MsgsMax: 5, BytesMax: 101}) {
		t.Error("the bytes bound is not at BytesMax")
	}
	pr.Sent(1, 0, 0)
	if len(pr.Inflights) != 1 || pr.Next != 2 {
		t.Errorf("an empty AppendEntries went in flight: %+v", pr)
	}
}
