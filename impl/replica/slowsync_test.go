package replica

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A stepped three-replica cluster whose fdatasyncs take virtual time: each
// StepSync is performed only syncTicks ticks after it became the WAL's next
// step (the disk is busy meanwhile). Messages are delivered in order within
// the tick they are sent.

const (
	slowElectionTick  = 10
	slowHeartbeatTick = 1
	slowTickDuration  = 10 * time.Millisecond
)

type slowNode struct {
	id      raft.NodeID
	w       *wal.WAL
	r       *Replica
	syncDue int // the tick at which the pending fdatasync completes; -1 none
}

type slowCluster struct {
	t         *testing.T
	clock     *fakeClock
	nodes     []*slowNode
	queue     []Message
	tick      int
	syncTicks int

	// Measured: heartbeats sent and not answered yet (by follower and
	// sequence number, the tick they left), the worst answer time, answers
	// later than one heartbeat interval, and campaigns.
	pending    map[[2]uint64]int
	worst      int
	late       int
	heartbeats int
	campaigns  int
}

type slowTransport struct {
	c  *slowCluster
	id raft.NodeID
}

func (st slowTransport) Send(ms []Message) {
	c := st.c
	for _, m := range ms {
		switch {
		case m.Type == raft.MsgApp && len(m.Entries) == 0:
			c.pending[[2]uint64{uint64(m.To), m.Seq}] = c.tick
			c.heartbeats++
		case m.Type == raft.MsgAppResp:
			key := [2]uint64{uint64(m.From), m.Seq}
			if at, ok := c.pending[key]; ok {
				delete(c.pending, key)
				c.answered(c.tick - at)
			}
		case m.Type == raft.MsgVote || m.Type == raft.MsgPreVote:
			c.campaigns++
		}
		c.queue = append(c.queue, m)
	}
}

func (c *slowCluster) answered(ticks int) {
	c.worst = max(c.worst, ticks)
	if ticks > slowHeartbeatTick {
		c.late++
	}
}

func newSlowCluster(t *testing.T, bugs Bug) *slowCluster {
	c := &slowCluster{t: t, clock: &fakeClock{now: time.Unix(1, 0)}, pending: map[[2]uint64]int{}}
	voters := []raft.NodeID{1, 2, 3}
	for _, id := range voters {
		w, rec, err := wal.Open(vfs.NewMemFS(vfs.MemConfig{Seed: uint64(id)}), "/d",
			wal.Options{Stepped: true, Clock: c.clock, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		cfg := raft.Config{ID: id, Voters: voters, ElectionTick: slowElectionTick, HeartbeatTick: slowHeartbeatTick,
			PreVote: true, CheckQuorum: true, Rand: rand.New(rand.NewPCG(uint64(id), 7))}
		r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: &entries{}, Transport: slowTransport{c, id},
			Logger: quiet, TestingBugs: bugs})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, &slowNode{id: id, w: w, r: r, syncDue: -1})
	}
	return c
}

// settle delivers every message and runs every WAL step that is due, until
// nothing more happens in this tick.
func (c *slowCluster) settle() {
	for progress := true; progress; {
		progress = false
		for len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			c.nodes[m.To-1].r.Handle(Event{Kind: EventMessage, Msg: m})
			progress = true
		}
		for _, n := range c.nodes {
			for k := 0; k < 1000; k++ {
				kind := n.w.NextStep()
				if kind == wal.StepNone {
					break
				}
				if kind == wal.StepSync {
					if n.syncDue < 0 {
						n.syncDue = c.tick + c.syncTicks
					}
					if c.tick < n.syncDue {
						break // the disk is busy
					}
					n.syncDue = -1
				}
				if err := n.w.Step(); err != nil {
					c.t.Fatalf("node %d: WAL step %v: %v", n.id, kind, err)
				}
				n.r.Handle(Event{Kind: EventWAL, Progress: n.w.Progress()})
				progress = true
			}
		}
	}
}

func (c *slowCluster) advance() {
	c.tick++
	c.clock.now = c.clock.now.Add(slowTickDuration)
	for _, n := range c.nodes {
		n.r.Handle(Event{Kind: EventTick})
	}
}

func (c *slowCluster) propose(data string, done func(Result)) {
	c.nodes[0].r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte(data), Done: done}}})
}

// slowRun elects node 1 on a fast disk, then runs ticks ticks with every
// fdatasync taking three election timeouts, a write proposed every tick and
// a linearizable read every fifth. It returns the cluster and the reads'
// answer times in ticks (-1: not answered).
func slowRun(t *testing.T, bugs Bug, ticks int) (*slowCluster, []int, int) {
	c := newSlowCluster(t, bugs)
	c.nodes[0].r.Handle(Event{Kind: EventCampaign})
	committed := 0
	for k := 0; k < 50 && committed == 0; k++ {
		c.settle()
		c.advance()
		if k == 5 {
			c.propose("first", func(r Result) {
				if r.Err == nil {
					committed++
				}
			})
		}
	}
	c.settle()
	if role, _, _ := c.nodes[0].r.Leadership(); role != raft.RoleLeader || committed == 0 {
		t.Fatalf("setup: node 1 %v, %d committed", role, committed)
	}
	_, term0, _ := c.nodes[0].r.Leadership()
	c.syncTicks = 3 * slowElectionTick
	c.pending, c.worst, c.late, c.heartbeats, c.campaigns = map[[2]uint64]int{}, 0, 0, 0, 0
	var reads []int
	acked := 0
	for k := 0; k < ticks; k++ {
		c.advance()
		c.propose(fmt.Sprintf("w%d", k), func(r Result) {
			if r.Err == nil {
				acked++
			}
		})
		if k%5 == 0 {
			slot, at := len(reads), c.tick
			reads = append(reads, -1)
			c.nodes[0].r.Handle(Event{Kind: EventRead, Reads: []Read{{Done: func(rr ReadResult) {
				if rr.Err == nil {
					reads[slot] = c.tick - at
				}
			}}}})
		}
		c.settle()
	}
	for _, at := range c.pending {
		if c.tick-at > slowHeartbeatTick {
			c.late++ // never answered
		}
	}
	if role, term, _ := c.nodes[0].r.Leadership(); role != raft.RoleLeader || term != term0 {
		c.campaigns++ // the leadership ended, whether or not a vote was asked yet
	}
	return c, reads, acked
}

// TestSlowSyncHeartbeatsOnTime: with every fdatasync taking three election
// timeouts of virtual time, a cluster under writes elects nobody new, every
// heartbeat is answered within one heartbeat interval, and every read round
// is confirmed within one: a follower's round writes no hard state (the
// learned commit is not hard state, issue 10 item 1), and a heartbeat beyond
// its durable log is answered with the durable prefix at once. With
// BugLearnedCommitHardState (each learned commit written as hard state,
// inputs held until it is durable, the rule before) heartbeats wait behind
// the fdatasyncs and the leader's check-quorum gives up.
func TestSlowSyncHeartbeatsOnTime(t *testing.T) {
	const ticks = 300
	c, reads, acked := slowRun(t, 0, ticks)
	t.Logf("new rule: %d heartbeats, worst answer %d ticks, %d late; %d campaigns; %d writes acknowledged; reads %v",
		c.heartbeats, c.worst, c.late, c.campaigns, acked, reads)
	if c.heartbeats < 2*ticks {
		t.Fatalf("%d heartbeats in %d ticks to 2 followers", c.heartbeats, ticks)
	}
	if c.late > 0 || c.worst > slowHeartbeatTick {
		t.Errorf("%d heartbeats answered later than one heartbeat interval (worst %d ticks)", c.late, c.worst)
	}
	if c.campaigns > 0 {
		t.Errorf("%d campaigns or a lost leadership with a slow disk", c.campaigns)
	}
	for k, d := range reads {
		if d < 0 || d > slowHeartbeatTick {
			t.Errorf("read %d answered after %d ticks (-1: never)", k, d)
		}
	}
	if acked == 0 {
		t.Errorf("no write acknowledged in %d ticks (an fdatasync takes %d)", ticks, 3*slowElectionTick)
	}

	old, _, _ := slowRun(t, BugLearnedCommitHardState, ticks)
	t.Logf("with %v: %d heartbeats, worst answer %d ticks, %d late; %d campaigns",
		BugLearnedCommitHardState, old.heartbeats, old.worst, old.late, old.campaigns)
	if old.late == 0 {
		t.Errorf("with %v no heartbeat was late: the test cannot tell the rules apart", BugLearnedCommitHardState)
	}
}
