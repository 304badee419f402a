package raft_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// fbCluster is a minimal network of nodes that confirm their first boots:
// every message of a Ready is delivered at once (MessagesAfterPersist
// too: the test persists nothing, so it keeps each node's last record).
type fbCluster struct {
	t       *testing.T
	nodes   map[raft.NodeID]*raft.Node
	stores  map[raft.NodeID]*raft.MemoryStorage
	records map[raft.NodeID]*raft.FirstBoot // what each driver made durable
	votes   map[raft.NodeID]int             // granted MsgVoteResp sent, per node
	down    map[raft.NodeID]bool
	mute    map[raft.NodeID]bool   // its MsgFirstBoot are lost
	asks    map[[2]raft.NodeID]int // MsgFirstBoot sent, per (from, to)
	bugs    raft.Bug
	// hardStates: each driver's last hard state; force: boot with
	// ForceNewCluster.
	hardStates map[raft.NodeID]raft.HardState
	force      bool
}

func newFBCluster(t *testing.T, ids ...raft.NodeID) *fbCluster {
	c := &fbCluster{t: t, nodes: map[raft.NodeID]*raft.Node{}, stores: map[raft.NodeID]*raft.MemoryStorage{}, records: map[raft.NodeID]*raft.FirstBoot{},
		votes: map[raft.NodeID]int{}, down: map[raft.NodeID]bool{}, mute: map[raft.NodeID]bool{}, asks: map[[2]raft.NodeID]int{}}
	for _, id := range ids {
		c.boot(id, ids, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: uint64(id) * 1000, State: raft.FirstBootUnconfirmed})
	}
	return c
}

func (c *fbCluster) boot(id raft.NodeID, voters []raft.NodeID, st *raft.MemoryStorage, fb *raft.FirstBoot) {
	cfg := raft.Config{TestingBugs: c.bugs, ID: id, Voters: voters, ElectionTick: 10, HeartbeatTick: 1, Storage: st, Rand: rand.New(rand.NewPCG(uint64(id), 7))}
	hs := c.hardStates[id]
	n, err := raft.NewNode(cfg, raft.Boot{Verdict: raft.VerdictClean, FirstBoot: fb, HardState: hs, ForceNewCluster: c.force})
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n
	c.stores[id] = st
	c.records[id] = fb
}

// run ticks every node up node k times and delivers everything.
func (c *fbCluster) run(ticks int) {
	for k := 0; k < ticks; k++ {
		for _, n := range c.nodes {
			if !c.down[n.Status().ID] {
				n.Tick()
			}
		}
		c.deliver()
	}
}

func (c *fbCluster) deliver() {
	for busy := true; busy; {
		busy = false
		for id, n := range c.nodes {
			if c.down[id] || !n.HasReady() {
				continue
			}
			busy = true
			rd := n.Ready()
			if rd.FirstBoot != nil {
				c.records[id] = rd.FirstBoot
			}
			if rd.HardStateChanged {
				if c.hardStates == nil {
					c.hardStates = map[raft.NodeID]raft.HardState{}
				}
				c.hardStates[id] = rd.HardState
			}
			st := c.stores[id]
			if rd.TruncateFrom > 0 {
				if err := st.Truncate(rd.TruncateFrom); err != nil {
					c.t.Fatal(err)
				}
			}
			if len(rd.Entries) > 0 {
				if err := st.Append(rd.Entries); err != nil {
					c.t.Fatal(err)
				}
				last := rd.Entries[len(rd.Entries)-1]
				n.Persisted()
				n.Advance(raft.AdvanceInfo{DurableIndex: last.Index, DurableTerm: last.Term})
			} else {
				n.Persisted()
			}
			for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
				if m.Type == raft.MsgVoteResp && m.Granted {
					c.votes[id]++
				}
				if m.Type == raft.MsgFirstBoot {
					c.asks[[2]raft.NodeID{id, m.To}]++
					if c.mute[id] {
						continue
					}
				}
				if to := c.nodes[m.To]; to != nil && !c.down[m.To] {
					_ = to.Step(m)
				}
			}
		}
	}
}

func (c *fbCluster) leader() raft.NodeID {
	for id, n := range c.nodes {
		if n.Status().Role == raft.RoleLeader {
			return id
		}
	}
	return raft.None
}

// TestFirstBootConfirmed: a new cluster's members confirm each other and
// elect a leader; no vote is granted before every first boot is
// confirmed by the others.
func TestFirstBootConfirmed(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	c.deliver()
	for id, r := range c.records {
		if r.State != raft.FirstBootConfirmed || len(r.Known) != 2 || r.Known[id] != 0 {
			t.Fatalf("node %d: record %+v after the first exchange", id, r)
		}
	}
	c.run(100)
	if c.leader() == raft.None {
		t.Fatal("no leader elected after confirmation")
	}
}

// TestFirstBootWipedBeforeAnyElection: a member wiped after every first
// boot was confirmed but before any vote is confirmed again by its
// PRISTINE peers (term 1, no vote, empty logs): nothing it did can have
// counted yet.
func TestFirstBootWipedBeforeAnyElection(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	c.deliver()
	c.boot(3, []raft.NodeID{1, 2, 3}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: 4242, State: raft.FirstBootUnconfirmed})
	c.deliver()
	if r := c.records[3]; r.State != raft.FirstBootConfirmed || r.Known[1] != 1000 || r.Known[2] != 2000 {
		t.Fatalf("member wiped before any election: record %+v, want CONFIRMED by 1 and 2", r)
	}
	for _, id := range []raft.NodeID{1, 2} {
		if r := c.records[id]; r.State != raft.FirstBootConfirmed {
			t.Fatalf("node %d: %+v", id, r)
		}
	}
}

// TestFirstBootPristineAnswer: a CONFIRMED voter that does not know the
// asker's incarnation says yes only while PRISTINE; a term past 1, a vote
// or an entry each makes it say no.
func TestFirstBootPristineAnswer(t *testing.T) {
	confirmed := &raft.FirstBoot{Incarnation: 2000, State: raft.FirstBootConfirmed, Known: map[raft.NodeID]uint64{1: 1000}}
	for _, tc := range []struct {
		name string
		hs   raft.HardState
		st   *raft.MemoryStorage
		rec  *raft.FirstBoot
		want raft.FirstBootState
	}{
		{"pristine", raft.HardState{Term: 1}, raft.NewMemoryStorage(), confirmed, raft.FirstBootConfirmed},
		{"a term past 1", raft.HardState{Term: 2}, raft.NewMemoryStorage(), confirmed, raft.FirstBootLost},
		{"a vote", raft.HardState{Term: 1, Vote: 2}, raft.NewMemoryStorage(), confirmed, raft.FirstBootLost},
		{"an entry", raft.HardState{Term: 1}, logOfTerms(1), confirmed, raft.FirstBootLost},
		// A voter whose driver keeps no record (from before the rule).
		{"no record, past its first boot", raft.HardState{Term: 2}, raft.NewMemoryStorage(), nil, raft.FirstBootLost},
		{"no record, pristine", raft.HardState{Term: 1}, raft.NewMemoryStorage(), nil, raft.FirstBootConfirmed},
	} {
		c := newFBCluster(t)
		c.hardStates = map[raft.NodeID]raft.HardState{2: tc.hs}
		c.boot(2, []raft.NodeID{1, 2}, tc.st, tc.rec)
		c.boot(1, []raft.NodeID{1, 2}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: 4242, State: raft.FirstBootUnconfirmed})
		c.deliver()
		if r := c.records[1]; r.State != tc.want {
			t.Errorf("%s: the asker's record %+v, want %v", tc.name, r, tc.want)
		}
	}
}

func logOfTerms(terms ...uint64) *raft.MemoryStorage {
	st := raft.NewMemoryStorage()
	for k, term := range terms {
		if err := st.Append([]raft.Entry{{Index: uint64(k + 1), Term: term}}); err != nil {
			panic(err)
		}
	}
	return st
}

// TestFirstBootWaitsForEveryVoter: one voter down, the others stay
// unconfirmed: they neither campaign nor grant votes, and ask it again
// once every ElectionTick ticks (not on every tick).
func TestFirstBootWaitsForEveryVoter(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	c.down[3] = true
	c.run(200)
	for _, id := range []raft.NodeID{1, 2} {
		// At boot, then every 10 ticks of 200.
		if got := c.asks[[2]raft.NodeID{id, 3}]; got != 1+200/10 {
			t.Fatalf("node %d asked the silent voter %d times in 200 ticks, want %d (at boot, then once an election timeout)", id, got, 1+200/10)
		}
	}
	for _, id := range []raft.NodeID{1, 2} {
		s := c.nodes[id].Status()
		if s.FirstBoot.State != raft.FirstBootUnconfirmed || s.Role != raft.RoleFollower || c.votes[id] != 0 {
			t.Fatalf("node %d: %v, role %v, %d votes, with a voter never heard", id, s.FirstBoot.State, s.Role, c.votes[id])
		}
		if err := c.nodes[id].Campaign(); !errors.Is(err, raft.ErrUnconfirmed) {
			t.Fatalf("campaign: %v", err)
		}
	}
	c.down[3] = false
	c.run(200)
	if c.leader() == raft.None {
		t.Fatal("no leader once the third voter answered")
	}
}

// TestFirstBootWiped: a member wiped after the cluster's first election
// (an empty store, a new incarnation) is told so, is lost for good and
// never grants a vote; with BugWipedVotes it would vote at once.
func TestFirstBootWiped(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	c.run(100)
	lead := c.leader()
	if lead == raft.None {
		t.Fatal("no leader")
	}
	if _, err := c.nodes[lead].Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.run(20)
	wiped := raft.NodeID(1)
	if wiped == lead {
		wiped = 2
	}
	c.votes[wiped] = 0
	c.boot(wiped, []raft.NodeID{1, 2, 3}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: 4242, State: raft.FirstBootUnconfirmed})
	c.run(5)
	s := c.nodes[wiped].Status()
	if r := c.records[wiped]; r.State != raft.FirstBootLost || r.LostTo == raft.None || !s.HardStateLost || s.Fence != raft.OutcomeHardStateLost {
		t.Fatalf("wiped member: record %+v, status %+v", r, s)
	}
	// The leader goes; the two others elect, the wiped one never votes.
	c.down[lead] = true
	c.run(300)
	if c.votes[wiped] != 0 {
		t.Fatalf("the wiped member granted %d votes", c.votes[wiped])
	}
	if got := wipedVotes(t, raft.BugWipedVotes); got == 0 {
		t.Fatal("-bug wiped-votes: the wiped member granted no vote")
	}
	if s := c.nodes[wiped].Status(); s.Role == raft.RoleLeader || s.FirstBoot.State != raft.FirstBootLost {
		t.Fatalf("wiped member after the leader's loss: %+v", s)
	}
	// Its restart keeps it lost: the record is durable.
	c.boot(wiped, []raft.NodeID{1, 2, 3}, raft.NewMemoryStorage(), c.records[wiped])
	if s := c.nodes[wiped].Status(); !s.HardStateLost {
		t.Fatalf("restarted wiped member: %+v", s)
	}
}

// TestFirstBootWipedByTheOnlyOtherVoter: in a cluster of two, the one
// other voter's no is every answer there is: the member is lost, never
// confirmed by having heard from everyone.
func TestFirstBootWipedByTheOnlyOtherVoter(t *testing.T) {
	c := newFBCluster(t, 1, 2)
	c.run(100)
	if c.leader() == raft.None {
		t.Fatal("no leader")
	}
	c.boot(1, []raft.NodeID{1, 2}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: 4242, State: raft.FirstBootUnconfirmed})
	c.run(30)
	if r, s := c.records[1], c.nodes[1].Status(); r.State != raft.FirstBootLost || r.LostTo != 2 || !s.HardStateLost {
		t.Fatalf("wiped member of two: record %+v, status %+v", r, s)
	}
}

// wipedVotes runs the wipe with the bug switches and returns the votes the
// wiped member grants once the leader is gone.
func wipedVotes(t *testing.T, bugs raft.Bug) int {
	c := newFBCluster(t)
	c.bugs = bugs
	for _, id := range []raft.NodeID{1, 2, 3} {
		c.boot(id, []raft.NodeID{1, 2, 3}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: uint64(id), State: raft.FirstBootUnconfirmed})
	}
	c.run(100)
	lead := c.leader()
	wiped := raft.NodeID(1)
	if wiped == lead {
		wiped = 2
	}
	c.boot(wiped, []raft.NodeID{1, 2, 3}, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: 99, State: raft.FirstBootUnconfirmed})
	c.votes[wiped] = 0
	c.down[lead] = true
	c.run(300)
	return c.votes[wiped]
}

// TestFirstBootSlowMember: a member whose answers reach the others before
// its own questions (the genesis race) is still confirmed, by the peers
// that know its incarnation.
func TestFirstBootSlowMember(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	// Node 3's own questions are lost; it answers the others, which are
	// confirmed and elect a leader.
	c.mute[3] = true
	c.run(60)
	if c.leader() == raft.None || c.leader() == 3 || c.nodes[3].Status().FirstBoot.State != raft.FirstBootUnconfirmed {
		t.Fatalf("leader %d, node 3 %v", c.leader(), c.nodes[3].Status().FirstBoot.State)
	}
	c.mute[3] = false
	c.run(30) // node 3 asks again: no peer is pristine, both know its incarnation
	if r := c.nodes[3].Status().FirstBoot; r.State != raft.FirstBootConfirmed {
		t.Fatalf("slow member: %+v", r)
	}
}

// TestFirstBootSingleVoter: alone, a first boot confirms itself.
func TestFirstBootSingleVoter(t *testing.T) {
	c := newFBCluster(t, 1)
	c.deliver()
	if r := c.records[1]; r.State != raft.FirstBootConfirmed {
		t.Fatalf("record %+v", r)
	}
}

func TestFirstBootMessagesValidate(t *testing.T) {
	for _, m := range []raft.Message{
		{Type: raft.MsgFirstBoot, From: 1, To: 2, Term: 1},
		{Type: raft.MsgFirstBoot, From: 1, To: 2, Term: 1, Seq: 5, Granted: true},
		{Type: raft.MsgFirstBootResp, From: 1, To: 2, Term: 1, Seq: 5, Commit: 3},
	} {
		if err := raft.Validate(&m, 2, nil); !errors.Is(err, raft.ErrInvalidMessage) {
			t.Errorf("%v: %v", m, err)
		}
	}
	ok := raft.Message{Type: raft.MsgFirstBootResp, From: 1, To: 2, Term: 1, Seq: 5, Round: 7, Granted: true}
	if err := raft.Validate(&ok, 2, nil); err != nil {
		t.Error(err)
	}
}

// TestForceNewCluster: two of three members lost for good; the survivor,
// booted with ForceNewCluster, is the only voter, elects itself and
// commits what its log holds and new writes.
func TestForceNewCluster(t *testing.T) {
	c := newFBCluster(t, 1, 2, 3)
	c.run(100)
	lead := c.leader()
	if lead == raft.None {
		t.Fatal("no leader")
	}
	idx, err := c.nodes[lead].Propose([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	c.run(20)
	c.down[1], c.down[2], c.down[3] = true, true, true
	survivor := lead%3 + 1
	c.force = true
	c.boot(survivor, []raft.NodeID{1, 2, 3}, c.stores[survivor], c.records[survivor])
	c.force = false
	c.down[survivor] = false
	c.run(100)
	n := c.nodes[survivor]
	s := n.Status()
	if s.Role != raft.RoleLeader || s.Commit < idx+2 {
		t.Fatalf("survivor after force-new-cluster: %+v", s)
	}
	if m := n.Membership(); len(m.Voters) != 1 || m.Voters[0] != survivor || len(m.Removed) != 2 {
		t.Fatalf("configuration %v", m)
	}
	if _, err := n.Propose([]byte("y")); err != nil {
		t.Fatal(err)
	}
	c.run(5)
	if got := n.Status().Commit; got < idx+3 {
		t.Fatalf("a new write did not commit alone: commit %d", got)
	}
}

// TestForceNewClusterRefusedOnLostHardState: a member whose hard state is
// lost (here: told it was wiped) may have voted in terms it no longer
// knows; forcing a new cluster on it is refused with ErrHardStateLost.
func TestForceNewClusterRefusedOnLostHardState(t *testing.T) {
	lost := &raft.FirstBoot{Incarnation: 9, State: raft.FirstBootLost, LostTo: 2}
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Storage: raft.NewMemoryStorage(), Rand: rand.New(rand.NewPCG(1, 7))}
	_, err := raft.NewNode(cfg, raft.Boot{Verdict: raft.VerdictClean, FirstBoot: lost, ForceNewCluster: true})
	if !errors.Is(err, raft.ErrHardStateLost) {
		t.Fatalf("force new cluster on a wiped member: %v, want ErrHardStateLost", err)
	}
	if _, err := raft.NewNode(cfg, raft.Boot{Verdict: raft.VerdictClean, FirstBoot: lost}); err != nil {
		t.Fatalf("the same member booted without forcing: %v", err)
	}
}

// TestFirstBootConfirmQuorum: with BugWipeConfirmQuorum, three other voters
// of five answering (one down) confirm a first boot; without it, nobody is
// confirmed until every voter answered.
func TestFirstBootConfirmQuorum(t *testing.T) {
	for _, bugs := range []raft.Bug{0, raft.BugWipeConfirmQuorum} {
		c := newFBCluster(t)
		c.bugs = bugs
		ids := []raft.NodeID{1, 2, 3, 4, 5}
		for _, id := range ids {
			c.boot(id, ids, raft.NewMemoryStorage(), &raft.FirstBoot{Incarnation: uint64(id), State: raft.FirstBootUnconfirmed})
		}
		c.down[5] = true
		c.run(30)
		got := c.records[1].State
		if want := map[raft.Bug]raft.FirstBootState{0: raft.FirstBootUnconfirmed, raft.BugWipeConfirmQuorum: raft.FirstBootConfirmed}[bugs]; got != want {
			t.Fatalf("bugs %v: node 1 %v, want %v", bugs, got, want)
		}
	}
}
