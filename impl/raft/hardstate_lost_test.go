package raft_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/trace"
)

// A member whose hard state was lost (Boot.HardStateLost) may have voted,
// and acknowledged entries, in a term it no longer knows. Each test runs
// its story twice: with the mark, nothing breaks; without it (the driver
// boots the member as if its recovered hard state were its own), the
// story breaks a cluster invariant, which is what the mode prevents.

// netIndex finds the first message from -> to of type typ in the network.
func netIndex(t *testing.T, c *rafttest.Cluster, from, to raft.NodeID, typ raft.MessageType) int {
	t.Helper()
	for k, m := range c.Net {
		if m.From == from && m.To == to && m.Type == typ {
			return k
		}
	}
	t.Fatalf("no %v %d->%d in the network: %v", typ, from, to, c.Net)
	return -1
}

func violated(c *rafttest.Cluster, invariant string) bool {
	for _, v := range c.Violations {
		if strings.HasPrefix(v, invariant) {
			return true
		}
	}
	return false
}

// TestHardStateLostNoDoubleVote: n3 votes for n1 in term 2, loses its hard
// state, and is asked by n2 for a vote in term 2. Unmarked, it votes again
// and term 2 has two leaders.
func TestHardStateLostNoDoubleVote(t *testing.T) {
	for _, marked := range []bool{true, false} {
		c, err := rafttest.NewCluster(rafttest.Options{N: 3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Campaign(1); err != nil {
			t.Fatal(err)
		}
		c.Drop(netIndex(t, c, 1, 2, raft.MsgVote))
		c.Deliver(netIndex(t, c, 1, 3, raft.MsgVote))
		c.Deliver(netIndex(t, c, 3, 1, raft.MsgVoteResp))
		if st := c.Node(1).Node.Status(); st.Role != raft.RoleLeader || st.HardState.Term != 2 {
			t.Fatalf("n1: %+v", st)
		}
		if err := c.LoseHardState(3, rafttest.HardStateZero, !marked); err != nil {
			t.Fatal(err)
		}
		if err := c.Campaign(2); err != nil {
			t.Fatal(err)
		}
		c.Drop(netIndex(t, c, 2, 1, raft.MsgVote))
		c.Deliver(netIndex(t, c, 2, 3, raft.MsgVote))
		for k := 0; k < len(c.Net); k++ {
			if m := c.Net[k]; m.From == 3 && m.To == 2 {
				c.Deliver(k)
				k--
			}
		}
		c.CheckInvariants()
		if !marked {
			if !violated(c, "ElectionSafety") {
				t.Fatalf("unmarked: n3 did not vote twice in term 2 (the story shows nothing): %v", c.Violations)
			}
			continue
		}
		if len(c.Violations) > 0 {
			t.Fatalf("with the mark: %v", c.Violations)
		}
		st := c.Node(3).Node.Status()
		if !st.HardStateLost || st.Fence != raft.OutcomeHardStateLost || st.FenceRow != "L" || !strings.Contains(st.FenceWhy, "may have voted") {
			t.Fatalf("n3 status: %+v", st)
		}
		if c.Node(2).Node.Status().Role == raft.RoleLeader {
			t.Fatal("n2 won term 2")
		}
	}
}

// TestHardStateLostAcksCountForNothing: n3 votes for n2 in term 3 (the
// grant still in flight), loses its hard state and comes back with the
// older copy of term 2, so it follows n1, the leader of term 2, which has
// not heard of term 3. Unmarked, its acknowledgment of x lets n1 commit x
// with {n1, n3}; then n2 wins term 3 with n3's earlier grant and lacks x:
// an acknowledged write is lost. Marked, n3 stores x durably and reports
// it passively: n1 sends on but does not commit.
func TestHardStateLostAcksCountForNothing(t *testing.T) {
	for _, marked := range []bool{true, false} {
		c, err := rafttest.NewCluster(rafttest.Options{N: 3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Campaign(1); err != nil {
			t.Fatal(err)
		}
		c.Stabilize(true, 100)
		if err := c.Propose(1, "a"); err != nil {
			t.Fatal(err)
		}
		c.Stabilize(true, 100)
		if err := c.Campaign(2); err != nil {
			t.Fatal(err)
		}
		c.Drop(netIndex(t, c, 2, 1, raft.MsgVote))
		c.Deliver(netIndex(t, c, 2, 3, raft.MsgVote))
		grant := c.Net[netIndex(t, c, 3, 2, raft.MsgVoteResp)]
		if !grant.Granted || grant.Term != 3 {
			t.Fatalf("n3 did not grant n2 term 3: %v", grant)
		}
		if err := c.LoseHardState(3, rafttest.HardStateOlder, !marked); err != nil {
			t.Fatal(err)
		}
		if hs := c.Node(3).Node.Status().HardState; hs.Term != 2 {
			t.Fatalf("n3 recovered %+v, want the older copy of term 2", hs)
		}
		if err := c.Propose(1, "x"); err != nil {
			t.Fatal(err)
		}
		xIndex := c.Node(1).Node.Status().Last
		c.Drop(netIndex(t, c, 1, 2, raft.MsgApp))
		c.Deliver(netIndex(t, c, 1, 3, raft.MsgApp))
		c.Flush(1)
		c.Flush(3)
		respType := raft.MsgAppResp
		if marked {
			respType = raft.MsgAppRespPassive
		}
		c.Deliver(netIndex(t, c, 3, 1, respType))
		c.Deliver(netIndex(t, c, 3, 2, raft.MsgVoteResp))
		if st := c.Node(2).Node.Status(); st.Role != raft.RoleLeader || st.HardState.Term != 3 {
			t.Fatalf("n2 did not win term 3 with n3's earlier grant: %+v", st)
		}
		c.CheckInvariants()
		if !marked {
			if !violated(c, "NoAckedLoss") {
				t.Fatalf("unmarked: no acknowledged write lost (the story shows nothing): %v", c.Violations)
			}
			continue
		}
		if len(c.Violations) > 0 {
			t.Fatalf("with the mark: %v", c.Violations)
		}
		if st := c.Node(1).Node.Status(); st.Commit >= xIndex {
			t.Fatalf("n1 committed x (index %d) with a passive report: commit %d", xIndex, st.Commit)
		}
		w := c.Node(3).WAL
		if tm, err := w.Log.Term(xIndex); err != nil || tm != 2 || w.Durable < xIndex {
			t.Fatalf("n3 does not hold x durably: term %d (%v), durable %d", tm, err, w.Durable)
		}
	}
}

// TestHardStateLostCatchesUp: a member that lost its hard state while
// behind is brought up to the leader's log through passive reports (in
// batches of two, through probe and replicate), applies what is committed,
// and still counts for nothing: with the third member down, a new entry it
// holds durably stays uncommitted.
func TestHardStateLostCatchesUp(t *testing.T) {
	c, err := rafttest.NewCluster(rafttest.Options{N: 3, Seed: 1, MsgEntriesMax: 2, InflightMsgsMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Campaign(1); err != nil {
		t.Fatal(err)
	}
	c.Stabilize(true, 100)
	matchBefore := c.Node(1).Node.Status().Progress[3].Match // acknowledged before the loss
	c.Stop(3, 0)
	for k := 0; k < 10; k++ {
		if err := c.Propose(1, "v"+string(rune('a'+k))); err != nil {
			t.Fatal(err)
		}
	}
	c.Stabilize(true, 100)
	if err := c.LoseHardState(3, rafttest.HardStateZero, false); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 10; r++ {
		c.Tick(1)
		c.Stabilize(true, 100)
	}
	l, f := c.Node(1).Node.Status(), c.Node(3).Node.Status()
	if f.Last != l.Last || f.Durable != l.Last || f.Applied != l.Commit || f.HardState.Term != l.HardState.Term {
		t.Fatalf("n3 did not catch up: leader %+v, n3 %+v", l, f)
	}
	if p := l.Progress[3]; p.Match != matchBefore || p.Next != l.Last+1 {
		t.Fatalf("leader's progress of n3 %+v: want match %d (passive reports never counted), next %d", p, matchBefore, l.Last+1)
	}
	c.Stop(2, 0)
	if err := c.Propose(1, "only-n1-and-n3"); err != nil {
		t.Fatal(err)
	}
	c.Stabilize(true, 100)
	if st := c.Node(1).Node.Status(); st.Commit >= st.Last || c.Node(3).Node.Status().Durable != st.Last {
		t.Fatalf("n1 commit %d last %d, n3 durable %d: want the entry durable on n3 and uncommitted",
			st.Commit, st.Last, c.Node(3).Node.Status().Durable)
	}
	if len(c.Violations) > 0 {
		t.Fatal(c.Violations)
	}
}

type events struct{ n int }

func (e *events) Event(trace.Event) { e.n++ }

// TestHardStateLostNode: the node itself. It boots over a log newer than
// the copy recovered (its term is raised to the log's), refuses to campaign
// with ErrHardStateLost, grants no pre-vote, answers no vote, traces
// nothing, says so every AlertTicks, and stays so however long it follows a
// leader.
func TestHardStateLostNode(t *testing.T) {
	st := raft.NewMemoryStorage()
	if err := st.Append([]raft.Entry{{Index: 1, Term: 2}, {Index: 2, Term: 3}}); err != nil {
		t.Fatal(err)
	}
	sink := &events{}
	cfg := raft.Config{ID: 2, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: fixedRand{}, Storage: st, Trace: sink}
	n, err := raft.NewNode(cfg, raft.Boot{HardStateLost: true, Verdict: raft.VerdictClean})
	if err != nil {
		t.Fatal(err)
	}
	s := n.Status()
	if s.HardState.Term != 3 || !s.HardStateLost || s.Fence != raft.OutcomeHardStateLost {
		t.Fatalf("status %+v", s)
	}
	rd := n.Ready()
	if got := countAlerts(rd, raft.AlertHardStateLost); got != 1 {
		t.Fatalf("%d hard-state-lost alerts at boot: %v", got, rd.Alerts)
	}
	if err := n.Campaign(); !errors.Is(err, raft.ErrHardStateLost) {
		t.Fatalf("campaign: %v", err)
	}
	for k := 0; k < 50; k++ { // election timeouts pass: it never campaigns
		n.Tick()
	}
	if n.Status().Role != raft.RoleFollower || n.Status().HardState.Term != 3 {
		t.Fatalf("after ticks: %+v", n.Status())
	}
	n.Ready()
	if err := n.Step(raft.Message{Type: raft.MsgPreVote, From: 1, To: 2, Term: 4, LastLogTerm: 3, LastLogIndex: 9}); err != nil {
		t.Fatal(err)
	}
	if err := n.Step(raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 4, LastLogTerm: 3, LastLogIndex: 9}); err != nil {
		t.Fatal(err)
	}
	rd = n.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].Type != raft.MsgPreVoteResp || rd.Messages[0].Granted || len(rd.MessagesAfterPersist) != 0 {
		t.Fatalf("want one refused pre-vote and no vote response: %v %v", rd.Messages, rd.MessagesAfterPersist)
	}
	if hs := rd.HardState; !rd.HardStateChanged || hs.Term != 4 || hs.Vote != raft.None {
		t.Fatalf("the vote request's term is followed, no vote cast: %+v", rd)
	}
	app := raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 4, PrevLogIndex: 2, PrevLogTerm: 3, Commit: 2, LeaderCommit: 2}
	alerts := 0
	for k := 0; k < 5*100; k++ {
		n.Tick()
		if k%10 == 0 {
			if err := n.Step(app); err != nil {
				t.Fatal(err)
			}
		}
		rd := n.Ready()
		alerts += countAlerts(rd, raft.AlertHardStateLost)
		for _, m := range rd.MessagesAfterPersist {
			if m.Type != raft.MsgAppRespPassive || !m.Success || m.MatchIndex != 2 {
				t.Fatalf("a lost hard state answers AppendEntries with %v", m)
			}
		}
	}
	if alerts != 5 { // AlertTicks defaults to 10 election ticks: 100 ticks
		t.Fatalf("%d alerts in 5 alert intervals", alerts)
	}
	if s := n.Status(); !s.HardStateLost || s.Commit != 2 || s.Fence != raft.OutcomeHardStateLost {
		t.Fatalf("after following a leader: %+v", s)
	}
	if sink.n != 0 {
		t.Fatalf("%d trace events from a node outside the spec", sink.n)
	}
}

type fixedRand struct{}

func (fixedRand) Uint64N(n uint64) uint64 { return 0 }

func countAlerts(rd raft.Ready, kind raft.AlertKind) int {
	c := 0
	for _, a := range rd.Alerts {
		if a.Kind == kind {
			c++
		}
	}
	return c
}
