package replica

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

type observed struct {
	stage Stage
	d     time.Duration
}

// TestStagesTimed: a leader's write passes append, leader fdatasync,
// majority durable and apply once each, in that order, each timed from
// the end of the one before by the replica's clock.
func TestStagesTimed(t *testing.T) {
	clock := time.Unix(100, 0)
	var got []observed
	tr := &testReplica{t: t, disk: vfs.NewMemFS(vfs.MemConfig{Seed: 1}), net: &capture{}, sm: &entries{}}
	tr.configure = func(c *Config) {
		c.Now = func() time.Time { return clock }
		c.ObserveStage = func(s Stage, d time.Duration) { got = append(got, observed{s, d}) }
	}
	// Three voters: node 1 leads, the test plays the followers, so that
	// the leader's fdatasync and the majority's are apart in time.
	tr.open(1, []raft.NodeID{1, 2, 3}, 0)
	tr.flush()
	tr.r.Handle(Event{Kind: EventCampaign})
	tr.flush()
	for _, m := range tr.net.take() {
		if m.Type == raft.MsgVote {
			tr.r.Handle(Event{Kind: EventMessage, Msg: Message{Message: raft.Message{Type: raft.MsgVoteResp, From: m.To, To: 1, Term: m.Term, Granted: true}}})
		}
	}
	tr.flush()
	if role, _, _ := tr.r.Leadership(); role != raft.RoleLeader {
		t.Fatalf("not leader: %+v", tr.r.Status())
	}
	ackAll := func() {
		for _, m := range tr.net.take() {
			if m.Type == raft.MsgApp {
				last := m.PrevLogIndex + uint64(len(m.Entries))
				tr.r.Handle(Event{Kind: EventMessage, Msg: Message{Message: raft.Message{Type: raft.MsgAppResp, From: m.To, To: 1,
					Term: m.Term, Success: true, MatchIndex: last, Seq: m.Seq, Round: m.Round}}})
			}
		}
		tr.flush()
	}
	ackAll() // the leader's no-op
	got = nil

	var res Result
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte("x"), At: clock.Add(-3 * time.Millisecond),
		Done: func(r Result) { res = r }}}})
	clock = clock.Add(5 * time.Millisecond)
	for tr.w.NextStep() != wal.StepNone {
		if err := tr.w.Step(); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(7 * time.Millisecond)
		tr.r.Handle(Event{Kind: EventWAL, Progress: tr.w.Progress()})
	}
	if tr.w.Progress().DurableIndex < tr.r.Status().Last {
		t.Fatalf("not durable after the WAL's steps")
	}
	clock = clock.Add(11 * time.Millisecond)
	ackAll()
	if res.Err != nil || string(res.Value) != "x" {
		t.Fatalf("result %+v", res)
	}
	want := []Stage{StageAppend, StageLeaderSync, StageApply, StageMajorityDurable}
	if len(got) != 4 {
		t.Fatalf("observed %v, want one of each of %v", got, want)
	}
	by := map[Stage]time.Duration{}
	for _, o := range got {
		if _, dup := by[o.stage]; dup {
			t.Fatalf("stage %v observed twice: %v", o.stage, got)
		}
		by[o.stage] = o.d
	}
	if by[StageAppend] != 3*time.Millisecond {
		t.Errorf("append %v, want 3ms (from Proposal.At to the WAL taking it)", by[StageAppend])
	}
	if d := by[StageLeaderSync] - 5*time.Millisecond; d <= 0 || d%(7*time.Millisecond) != 0 {
		t.Errorf("leader fdatasync %v: want a whole number of WAL steps (7ms each) after the append", d)
	}
	if d := by[StageMajorityDurable]; d < 11*time.Millisecond {
		t.Errorf("majority durable %v, want at least the 11ms the followers took", d)
	}
	if by[StageApply] != 0 {
		t.Errorf("apply %v, want 0 (the clock stood still)", by[StageApply])
	}
}

// TestStagesUntimed: without a clock, nothing is observed and proposals
// still complete.
func TestStagesUntimed(t *testing.T) {
	tr := leaderOf(t)
	var res Result
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte("y"), Done: func(r Result) { res = r }}}})
	tr.flush()
	if res.Err != nil || tr.r.timing() || tr.r.durableTimed != 0 {
		t.Fatalf("result %+v, timing %v, durableTimed %d", res, tr.r.timing(), tr.r.durableTimed)
	}
}

// TestDurableClampLogged: a follower whose durable entries 3..5 are
// replaced by a new leader's logs the clamp of its durable index once,
// from 5 to 2, and the durable index is 2 until the new entries sync.
func TestDurableClampLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	tr := &testReplica{t: t, disk: vfs.NewMemFS(vfs.MemConfig{Seed: 2}), net: &capture{}, sm: &entries{}}
	w, rec, err := wal.Open(tr.disk, "/d", wal.Options{Stepped: true, Clock: &fakeClock{now: time.Unix(1, 0)}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := raft.Config{ID: 2, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: rand.New(rand.NewPCG(2, 1))}
	r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: tr.sm, Transport: tr.net, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	tr.w, tr.r = w, r
	tr.flush()
	deliver := func(m Message) { tr.r.Handle(Event{Kind: EventMessage, Msg: m}); tr.flush() }
	deliver(tr.app(2, 0, 0, []uint64{2, 2, 2, 2, 2}))
	if d := tr.w.Progress().DurableIndex; d != 5 {
		t.Fatalf("durable %d, want 5", d)
	}
	tr.r.Handle(Event{Kind: EventMessage, Msg: tr.app(3, 2, 2, []uint64{3, 3, 3, 3})})
	var clamps []map[string]any
	for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == "wal: durable index clamped by suffix truncation" {
			clamps = append(clamps, m)
		}
	}
	if len(clamps) != 1 || clamps[0]["from"] != float64(5) || clamps[0]["to"] != float64(2) {
		t.Fatalf("clamp lines %v, want one from 5 to 2", clamps)
	}
}

// TestStagesFollowersFirst: both followers acknowledge before the leader's
// own fdatasync covers the entry (they run in parallel), so the commit
// comes first: every stage is still observed once, the leader's ending at
// the commit and the majority's taking no time, and the leader's later
// fdatasync observes nothing more. (Before, such a write had neither
// stage: impl/server's TestMetrics failed in 2-5 runs of 10 on a loaded
// machine, "stage leader_fdatasync: 9 observations ... want one per write".)
func TestStagesFollowersFirst(t *testing.T) {
	clock := time.Unix(100, 0)
	var got []observed
	tr := &testReplica{t: t, disk: vfs.NewMemFS(vfs.MemConfig{Seed: 1}), net: &capture{}, sm: &entries{}}
	tr.configure = func(c *Config) {
		c.Now = func() time.Time { return clock }
		c.ObserveStage = func(s Stage, d time.Duration) { got = append(got, observed{s, d}) }
	}
	tr.open(1, []raft.NodeID{1, 2, 3}, 0)
	tr.flush()
	tr.r.Handle(Event{Kind: EventCampaign})
	tr.flush()
	for _, m := range tr.net.take() {
		if m.Type == raft.MsgVote {
			tr.r.Handle(Event{Kind: EventMessage, Msg: Message{Message: raft.Message{Type: raft.MsgVoteResp, From: m.To, To: 1, Term: m.Term, Granted: true}}})
		}
	}
	tr.flush()
	ack := func(ms []Message) {
		for _, m := range ms {
			if m.Type == raft.MsgApp {
				last := m.PrevLogIndex + uint64(len(m.Entries))
				tr.r.Handle(Event{Kind: EventMessage, Msg: Message{Message: raft.Message{Type: raft.MsgAppResp, From: m.To, To: 1,
					Term: m.Term, Success: true, MatchIndex: last, Seq: m.Seq, Round: m.Round}}})
			}
		}
	}
	ack(tr.net.take()) // the leader's no-op
	tr.flush()
	got = nil

	var res Result
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte("x"), Done: func(r Result) { res = r }}}})
	if tr.w.Progress().DurableIndex >= tr.r.Status().Last {
		t.Fatalf("the leader's entry is durable before its WAL stepped")
	}
	clock = clock.Add(13 * time.Millisecond)
	ack(tr.net.take()) // both followers, the leader's fdatasync still to come
	if res.Err != nil || string(res.Value) != "x" {
		t.Fatalf("not committed on the followers' acknowledgments: result %+v", res)
	}
	clock = clock.Add(7 * time.Millisecond)
	tr.flush() // the leader's fdatasync
	by := map[Stage]time.Duration{}
	for _, o := range got {
		if _, dup := by[o.stage]; dup {
			t.Fatalf("stage %v observed twice: %v", o.stage, got)
		}
		by[o.stage] = o.d
	}
	if len(by) != 4 || by[StageLeaderSync] != 13*time.Millisecond || by[StageMajorityDurable] != 0 {
		t.Fatalf("observed %v; want each stage once, leader fdatasync 13ms (to the commit), majority durable 0", got)
	}
}
