package raft

import (
	"math"
	"slices"
	"testing"
)

// corrupt reboots id after a corruption that kept only the first keep
// entries of its durable log: the WAL's TRUNCATED verdict, the hard state
// kept (it lives in a record of its own), the state machine rebuilt.
func (c *snapCluster) corrupt(id NodeID, keep uint64) {
	c.t.Helper()
	old, st := c.nodes[id], c.st[id]
	ents, err := st.Entries(st.FirstIndex(), keep+1, math.MaxUint64)
	if err != nil {
		c.t.Fatal(err)
	}
	ns := NewMemoryStorage()
	if err := ns.Append(ents); err != nil {
		c.t.Fatal(err)
	}
	cfg := old.cfg
	cfg.Storage = ns
	c.nodes[id] = mustNode(c.t, cfg, Boot{HardState: old.hs, Verdict: VerdictTruncated})
	c.st[id], c.applied[id], c.snap[id] = ns, nil, SnapshotInfo{}
}

// TestRepairFromSnapshot: issue 18's "TRUNCATED member behind the
// compaction point", in the case the fence release does not cover. Two of
// four members (n3, n4) lose most of their durable logs while the two
// CLEAN ones have compacted past what they kept; the leader is cut off, so
// no leader can be elected (n2 and the returning n1 are two voters of
// four). With Config.PeerRepair each TRUNCATED member asks its peers, gets
// a snapshot (its probe is below their compaction point), then the entries
// after it, and votes again once both CLEAN voters answered; a leader is
// elected and every state machine ends equal, the writes from before the
// corruptions included. Without PeerRepair nobody is elected.
func TestRepairFromSnapshot(t *testing.T) {
	for _, repair := range []bool{false, true} {
		c := newSnapCluster(t, 4, false)
		for _, id := range c.ids {
			c.nodes[id].cfg.PeerRepair = repair
			if !repair {
				// Under marked votes the four would elect unanimously once
				// n1 is back (ambiguous.go); the rule before shows what
				// the repair adds.
				c.nodes[id].cfg.TestingBugs |= BugTruncatedWithholdsVote
			}
		}
		c.elect(1)
		c.propose(30)
		s := c.snapshotAndCompact(1, 2)
		c.snapshotAndCompact(2, 2)
		c.corrupt(3, 3)
		c.corrupt(4, 3)
		c.settle()
		c.down[1] = true // the leader is cut off: n2 alone cannot be elected
		c.tick(45)       // beyond CatchUpTicks: n3 and n4 ask; n1 does not answer
		for _, id := range []NodeID{3, 4} {
			if st := c.nodes[id].Status(); st.Verdict != "TRUNCATED" {
				t.Fatalf("repair=%v: n%d released with n1 silent: %+v", repair, id, st)
			}
		}
		c.down[1] = false
		c.tick(60)
		l := c.leader()
		if !repair {
			if l != nil {
				t.Fatalf("without PeerRepair: n%d elected with two TRUNCATED members of four", l.id)
			}
			continue
		}
		for _, id := range []NodeID{3, 4} {
			if st := c.nodes[id].Status(); st.Verdict != "CLEAN" {
				t.Fatalf("n%d not repaired: %+v", id, st)
			}
		}
		if c.installs < 2 {
			t.Fatalf("%d snapshot installs, want the repairs of n3 and n4 by snapshot", c.installs)
		}
		if l == nil {
			t.Fatal("no leader after the repairs")
		}
		c.propose(3)
		c.tick(2) // the followers learn the last commit index
		want := c.applied[l.id]
		if len(want) < 33 || want[s.Index-1] != c.applied[2][s.Index-1] {
			t.Fatalf("leader n%d applied %d entries", l.id, len(want))
		}
		for _, id := range c.ids {
			if !slices.Equal(c.applied[id], want) {
				t.Errorf("n%d applied %d entries, leader %d (or they differ)", id, len(c.applied[id]), len(want))
			}
		}
	}
}

// TestRepairForgetsSilentLeader: sim seed 154 (TestSimulatedRuntime, with
// PeerRepair on by default). Two TRUNCATED members of four follow the
// leader after their boot; the leader crashes and restarts in the same
// term, a follower. Pre-vote: nobody can win one (the TRUNCATED members
// grant none), so no new term ever comes. The TRUNCATED members still name
// the old leader and never campaign, so nothing made them forget it, and
// the repair waited for "no leader": the cluster stayed without one for
// good. The repair now starts once no leader was heard for CatchUpTicks,
// whoever the member last followed; they are repaired, a leader is elected.
func TestRepairForgetsSilentLeader(t *testing.T) {
	c := newSnapCluster(t, 4, false)
	for _, id := range c.ids {
		cfg := &c.nodes[id].cfg
		cfg.PeerRepair, cfg.PreVote, cfg.CheckQuorum = true, true, true
	}
	c.elect(1)
	c.propose(10)
	c.corrupt(3, 3)
	c.corrupt(4, 3)
	c.tick(3) // n3 and n4 follow n1 again, TRUNCATED
	for _, id := range []NodeID{3, 4} {
		if st := c.nodes[id].Status(); st.Verdict != "TRUNCATED" || c.nodes[id].lead != 1 {
			t.Fatalf("n%d: %+v, lead %d; want TRUNCATED following n1", id, st, c.nodes[id].lead)
		}
	}
	// n1 restarts: its whole log kept, CLEAN, a follower of its term.
	old := c.nodes[1]
	cfg := old.cfg
	c.nodes[1] = mustNode(t, cfg, Boot{HardState: old.hs, Verdict: VerdictClean, Applied: uint64(len(c.applied[1]))})
	c.tick(150)
	if c.leader() == nil {
		for _, id := range c.ids {
			t.Logf("n%d: %+v lead %d", id, c.nodes[id].Status(), c.nodes[id].lead)
		}
		t.Fatal("no leader: the TRUNCATED members were never repaired")
	}
	for _, id := range []NodeID{3, 4} {
		if st := c.nodes[id].Status(); st.Verdict != "CLEAN" {
			t.Fatalf("n%d not repaired: %+v", id, st)
		}
	}
}
