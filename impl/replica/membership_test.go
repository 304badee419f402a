package replica

import (
	"errors"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// change asks the leader for ch and settles; it returns the answer.
func (c *ccluster) change(ch raft.ConfChange) Result {
	c.t.Helper()
	l := c.leader()
	if l == nil {
		c.t.Fatal("no leader")
	}
	var res *Result
	l.r.Handle(Event{Kind: EventChangeConfig, Change: &ChangeRequest{Change: ch, Done: func(r Result) { res = &r }}})
	c.settle()
	if res == nil {
		c.t.Fatalf("%v %d: no answer", ch.Kind, ch.ID)
	}
	return *res
}

// TestMembershipChange: through the replica, a 3-voter cluster adds n4 as
// a learner (answered once its entry applied), n4 catches up and applies
// what the others applied (a configuration entry reaching every state
// machine as an empty entry, hashSM's assertion), is promoted, and n3 is
// removed; every replica's OnMembership and Status follow; a refused
// change is a definite ErrChangeRefused with the core's reason.
func TestMembershipChange(t *testing.T) {
	c := newCClusterVoters(t, 4, 3, snapOpts())
	c.elect(1)
	c.write(5)
	if res := c.change(raft.ConfChange{Kind: raft.ConfPromote, ID: 4}); !errors.Is(res.Err, ErrChangeRefused) ||
		!errors.Is(res.Err, raft.ErrNotMember) || !Definite(res.Err) {
		t.Fatalf("promoting a non-member: %v", res.Err)
	}
	res := c.change(raft.ConfChange{Kind: raft.ConfAddLearner, ID: 4})
	if res.Err != nil || res.Index == 0 {
		t.Fatalf("add-learner: %+v", res)
	}
	c.write(3)
	c.sameState()
	for _, id := range c.ids {
		if got := c.members[id]; !slices.Equal(got.Learners, []raft.NodeID{4}) || !slices.Equal(got.Voters, []raft.NodeID{1, 2, 3}) {
			t.Fatalf("n%d's configuration: %v", id, got)
		}
	}
	if res := c.change(raft.ConfChange{Kind: raft.ConfPromote, ID: 4}); res.Err != nil {
		t.Fatalf("promote: %v", res.Err)
	}
	removal := c.change(raft.ConfChange{Kind: raft.ConfRemove, ID: 3})
	if removal.Err != nil {
		t.Fatalf("remove: %v", removal.Err)
	}
	c.write(2)
	// The leader replicates to the members of its configuration only (spec
	// AppendEntries): the removed n3 never receives the entry that removes
	// it, and its operator stops it (pre-vote keeps it from disrupting).
	if st := c.nodes[3].r.Status(); st.Last >= removal.Index || !slices.Contains(st.Voters, 3) {
		t.Fatalf("n3 after its removal: last %d (removal at %d), voters %v", st.Last, removal.Index, st.Voters)
	}
	c.crash(c.nodes[3])
	c.sameState()
	st := c.nodes[4].r.Status()
	if !slices.Equal(st.Voters, []raft.NodeID{1, 2, 4}) || len(st.Learners) != 0 {
		t.Fatalf("n4's status: voters %v learners %v", st.Voters, st.Learners)
	}
	if got := c.members[2]; !slices.Equal(got.Removed, []raft.NodeID{3}) {
		t.Fatalf("n2's configuration %v", got)
	}
	if res := c.change(raft.ConfChange{Kind: raft.ConfAddLearner, ID: 3}); !errors.Is(res.Err, raft.ErrRemovedID) {
		t.Fatalf("re-adding a removed id: %v", res.Err)
	}
	if n := c.nodes[1].r.Stats().MembershipChanges.Load(); n < 4 {
		t.Fatalf("%d membership changes reported on n1", n)
	}
	// A restart keeps the configuration (read back from the WAL).
	c.crash(c.nodes[2])
	c.restart(c.nodes[2])
	if got := c.members[2]; !slices.Equal(got.Voters, []raft.NodeID{1, 2, 4}) {
		t.Fatalf("n2 after a restart: %v", got)
	}
}

// TestMembershipSurvivesSnapshots: the configuration a snapshot records
// (the one in force at its index) comes back with it: n3, down while n4
// joins and is promoted, catches up by a snapshot of a log compacted past
// both changes and takes the configuration from it; n2 restarts from its
// own snapshot with its log compacted past them.
func TestMembershipSurvivesSnapshots(t *testing.T) {
	c := newCClusterVoters(t, 4, 3, snapOpts())
	c.elect(1)
	c.write(3)
	c.crash(c.nodes[3])
	if res := c.change(raft.ConfChange{Kind: raft.ConfAddLearner, ID: 4}); res.Err != nil {
		t.Fatal(res.Err)
	}
	c.write(2)
	if res := c.change(raft.ConfChange{Kind: raft.ConfPromote, ID: 4}); res.Err != nil {
		t.Fatal(res.Err)
	}
	c.write(120)
	want := []raft.NodeID{1, 2, 3, 4}
	if first := c.nodes[1].w.FirstIndex(); first < 10 {
		t.Fatalf("the leader's log starts at %d: not compacted past the changes", first)
	}
	c.restart(c.nodes[3])
	c.tick(5)
	c.write(2)
	c.sameState()
	st := c.nodes[3].r.Status()
	if st.Snapshots.Installed == 0 || !slices.Equal(st.Voters, want) || !slices.Equal(c.members[3].Voters, want) {
		t.Fatalf("n3 after catching up: installed %d, voters %v (reported %v)", st.Snapshots.Installed, st.Voters, c.members[3].Voters)
	}
	c.crash(c.nodes[2])
	c.restart(c.nodes[2])
	if st := c.nodes[2].r.Status(); st.SnapshotBoot == "" || !slices.Equal(st.Voters, want) {
		t.Fatalf("n2 after a restart (boot %s): voters %v", st.SnapshotBoot, st.Voters)
	}
}
