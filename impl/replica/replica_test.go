package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The tests here drive single replicas in stepped mode by hand: every WAL
// step and every delivery is the test's. Whole clusters under faults run
// in conformance/ (they check traces against the spec).

type capture struct{ msgs []Message }

func (c *capture) Send(ms []Message) { c.msgs = append(c.msgs, ms...) }

func (c *capture) take() []Message {
	ms := c.msgs
	c.msgs = nil
	return ms
}

type entries struct{ applied []raft.Entry }

func (e *entries) Apply(ent raft.Entry) []byte {
	e.applied = append(e.applied, ent)
	return ent.Data
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testReplica is one replica on an in-memory disk, stepped.
type testReplica struct {
	t    *testing.T
	disk *vfs.MemFS
	w    *wal.WAL
	r    *Replica
	net  *capture
	sm   *entries
	// configure, when set, adjusts the replica's configuration at open.
	configure func(*Config)
}

func newTestReplica(t *testing.T, id raft.NodeID, voters []raft.NodeID, bugs Bug) *testReplica {
	t.Helper()
	tr := &testReplica{t: t, disk: vfs.NewMemFS(vfs.MemConfig{Seed: uint64(id)}), net: &capture{}, sm: &entries{}}
	tr.open(id, voters, bugs)
	return tr
}

func (tr *testReplica) open(id raft.NodeID, voters []raft.NodeID, bugs Bug) {
	tr.t.Helper()
	w, rec, err := wal.Open(tr.disk, "/d", wal.Options{Stepped: true, Clock: &fakeClock{now: time.Unix(1, 0)}, Logger: quiet})
	if err != nil {
		tr.t.Fatal(err)
	}
	cfg := raft.Config{ID: id, Voters: voters, ElectionTick: 10, HeartbeatTick: 1, Rand: rand.New(rand.NewPCG(uint64(id), 1))}
	rc := Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: tr.sm, Transport: tr.net, Logger: quiet, TestingBugs: bugs}
	if tr.configure != nil {
		tr.configure(&rc)
	}
	r, err := New(rc)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.w, tr.r = w, r
}

// flush runs the WAL's steps until it is idle, reporting progress after
// each, as the production watcher does.
func (tr *testReplica) flush() {
	tr.t.Helper()
	for k := 0; k < 100 && tr.w.NextStep() != wal.StepNone; k++ {
		if err := tr.w.Step(); err != nil {
			tr.t.Fatalf("WAL step: %v", err)
		}
		tr.r.Handle(Event{Kind: EventWAL, Progress: tr.w.Progress()})
	}
}

// TestHoldsUntilHardStateDurable: a vote granted leaves only once the vote
// is durable, and inputs arriving meanwhile wait (rule 1).
func TestHoldsUntilHardStateDurable(t *testing.T) {
	tr := newTestReplica(t, 2, []raft.NodeID{1, 2, 3}, 0)
	tr.flush()
	tr.net.take()
	vote := Message{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 2}}
	tr.r.Handle(Event{Kind: EventMessage, Msg: vote})
	if ms := tr.net.take(); len(ms) != 0 {
		t.Fatalf("sent %v before the vote was durable", ms)
	}
	if st := tr.r.Status(); !st.Holding {
		t.Fatalf("not holding while the vote is not durable: %+v", st)
	}
	// An input now waits: a vote request of another candidate in term 2 is
	// not even looked at until the first vote is durable.
	other := Message{Message: raft.Message{Type: raft.MsgVote, From: 3, To: 2, Term: 2}}
	tr.r.Handle(Event{Kind: EventMessage, Msg: other})
	if st := tr.r.Status(); st.Queued != 1 {
		t.Fatalf("queued %d inputs, want 1", st.Queued)
	}
	tr.flush()
	ms := tr.net.take()
	granted := map[raft.NodeID]bool{}
	for _, m := range ms {
		if m.Type == raft.MsgVoteResp {
			granted[m.To] = m.Granted
		}
	}
	if !granted[1] || granted[3] {
		t.Fatalf("vote responses %v: want granted to 1 only", ms)
	}
	if hs := tr.w.Progress().HardState; hs.Vote != 1 || hs.Term != 2 {
		t.Fatalf("durable hard state %+v", hs)
	}
}

// TestSendBeforePersistBug: with the switch, the vote leaves before it is
// durable (what the conformance runs must catch).
func TestSendBeforePersistBug(t *testing.T) {
	tr := newTestReplica(t, 2, []raft.NodeID{1, 2, 3}, BugSendBeforePersist)
	tr.flush()
	tr.net.take()
	tr.r.Handle(Event{Kind: EventMessage, Msg: Message{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 2}}})
	ms := tr.net.take()
	if len(ms) != 1 || ms[0].Type != raft.MsgVoteResp || !ms[0].Granted {
		t.Fatalf("with send-before-persist the grant should leave at once: %v", ms)
	}
	if hs := tr.w.Progress().HardState; hs.Vote == 1 {
		t.Fatalf("vote durable already: %+v", hs)
	}
}

// leaderOf makes a single-voter replica leader and returns it.
func leaderOf(t *testing.T) *testReplica {
	tr := newTestReplica(t, 1, []raft.NodeID{1}, 0)
	tr.r.Handle(Event{Kind: EventCampaign})
	tr.flush()
	if role, _, _ := tr.r.Leadership(); role != raft.RoleLeader {
		t.Fatalf("single voter not leader: %+v", tr.r.Status())
	}
	return tr
}

// TestProposeAppliesAfterDurable: a single voter acknowledges a write only
// once its own WAL made it durable (it counts itself at its durable index).
func TestProposeAppliesAfterDurable(t *testing.T) {
	tr := leaderOf(t)
	var got []Result
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{
		{Data: []byte("a"), Done: func(r Result) { got = append(got, r) }},
		{Data: []byte("b"), Done: func(r Result) { got = append(got, r) }},
	}})
	if len(got) != 0 {
		t.Fatalf("answered before durable: %+v", got)
	}
	tr.flush()
	if len(got) != 2 || got[0].Err != nil || string(got[0].Value) != "a" || string(got[1].Value) != "b" || got[1].Index != got[0].Index+1 {
		t.Fatalf("results %+v", got)
	}
	if d := tr.w.Progress().DurableIndex; d < got[1].Index {
		t.Fatalf("acknowledged %d with durable index %d", got[1].Index, d)
	}
}

// TestReadsBatched: every read waiting when a round starts is served by
// that round, after the state machine applied the read index.
func TestReadsBatched(t *testing.T) {
	tr := leaderOf(t)
	var got []ReadResult
	done := func(r ReadResult) { got = append(got, r) }
	tr.r.Handle(Event{Kind: EventRead, Reads: []Read{{Done: done}, {Done: done}, {Done: done}}})
	tr.flush()
	if len(got) != 3 {
		t.Fatalf("reads answered: %+v", got)
	}
	for _, r := range got {
		if r.Err != nil || r.Applied < r.Index {
			t.Fatalf("read %+v", r)
		}
	}
	if n := tr.r.Stats().ReadRounds.Load(); n != 1 {
		t.Fatalf("%d read rounds for one batch", n)
	}
}

// TestNotLeaderIsDefinite: a follower refuses a proposal at once.
func TestNotLeaderIsDefinite(t *testing.T) {
	tr := newTestReplica(t, 2, []raft.NodeID{1, 2, 3}, 0)
	tr.flush() // the first boot's hard state
	var got Result
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte("x"), Done: func(r Result) { got = r }}}})
	if !errors.Is(got.Err, ErrNotLeader) || !Definite(got.Err) {
		t.Fatalf("got %+v", got)
	}
}

// TestBootPersistsTruncatedMark: a replica booted on a log the WAL found
// TRUNCATED has the core's mark (TruncatedAtTerm) durable from the start, so
// a crash cannot leave a cut log that the next boot calls CLEAN (the boot
// window). It failed before New processed the boot's own Ready (the mark
// was left until the first input), and its first check fails while
// wal.Open leaves the mark to the core (the mark then waits for the boot
// Ready's sync, with the cut already durable).
func TestBootPersistsTruncatedMark(t *testing.T) {
	tr := leaderOf(t)
	var got []Result
	for k := 0; k < 20; k++ {
		tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte(fmt.Sprintf("v%d", k)), Done: func(r Result) { got = append(got, r) }}}})
		tr.flush()
	}
	if len(got) != 20 {
		t.Fatalf("%d results", len(got))
	}
	if err := tr.w.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage a durable record in the middle of the log, at rest.
	names, err := tr.disk.List("/d")
	if err != nil {
		t.Fatal(err)
	}
	var seg string
	for _, n := range names {
		if strings.HasPrefix(n, "seg-") {
			seg = "/d/" + n
		}
	}
	img, err := tr.disk.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	off := bytes.Index(img, []byte("v5"))
	if off < 0 {
		t.Fatal("record v5 not found on disk")
	}
	if err := tr.disk.FlipBit(seg, int64(off), 0); err != nil {
		t.Fatal(err)
	}
	tr.open(1, []raft.NodeID{1}, 0)
	st := tr.r.Status()
	if st.Verdict != "TRUNCATED" {
		t.Fatalf("after a TRUNCATED recovery: verdict %s", st.Verdict)
	}
	// Durable before any WAL step: wal.Open wrote the mark before the cut
	// (wal's TestTruncatedMarkDurableBeforeTheCut crashes right there).
	if hs := tr.w.Progress().HardState; hs.TruncatedAtTerm == 0 {
		t.Fatalf("the TRUNCATED mark is not durable at boot: %+v", hs)
	}
	tr.flush()
	if hs := tr.w.Progress().HardState; hs.TruncatedAtTerm == 0 {
		t.Fatalf("the TRUNCATED mark is not durable: %+v", hs)
	}
	if st := tr.r.Status(); st.Verdict != "TRUNCATED" || st.HardState.TruncatedAtTerm == 0 {
		t.Fatalf("after the boot Ready: %+v", st)
	}
}

// TestQueuedProposalsBatched: proposals that wait behind a hold reach the
// core as one batch (one WAL cycle for all of them).
func TestQueuedProposalsBatched(t *testing.T) {
	tr := leaderOf(t)
	// A campaign-free hold: the single voter's hard state changes when it
	// learns its own commit; make the replica hold, then queue proposals.
	var got []Result
	done := func(r Result) { got = append(got, r) }
	tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte("first"), Done: done}}})
	for tr.w.NextStep() != wal.StepNone && !tr.r.Status().Holding {
		if err := tr.w.Step(); err != nil {
			t.Fatal(err)
		}
		tr.r.Handle(Event{Kind: EventWAL, Progress: tr.w.Progress()})
	}
	if !tr.r.Status().Holding {
		t.Skip("the replica never held (nothing to batch behind)")
	}
	for k := 0; k < 10; k++ {
		tr.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: []byte(fmt.Sprintf("q%d", k)), Done: done}}})
	}
	if q := tr.r.Status().Queued; q != 10 {
		t.Fatalf("queued %d", q)
	}
	before := tr.r.Stats().ProposalBatches.Load()
	tr.flush()
	if n := tr.r.Stats().ProposalBatches.Load() - before; n != 1 {
		t.Fatalf("10 queued proposals reached the core in %d batches, want 1", n)
	}
	if len(got) != 11 {
		t.Fatalf("%d results", len(got))
	}
	for k, r := range got[1:] {
		if r.Err != nil || r.Index != got[1].Index+uint64(k) {
			t.Fatalf("result %d: %+v", k, r)
		}
	}
}

// app builds an AppendEntries from leader 1 with entries of term at
// indexes prev+1.., their records chained to the follower's own chain value
// at prev (so they verify where the logs agree).
func (tr *testReplica) app(term, prev, prevTerm uint64, termsOf []uint64) Message {
	tr.t.Helper()
	sum, err := tr.w.Checksum(prev)
	if err != nil {
		tr.t.Fatal(err)
	}
	m := Message{Message: raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: term, PrevLogIndex: prev, PrevLogTerm: prevTerm}, PrevChecksum: sum}
	for k, t := range termsOf {
		e := raft.Entry{Index: prev + 1 + uint64(k), Term: t, Data: []byte(fmt.Sprintf("e%d/%d", t, prev+1+uint64(k)))}
		rec, s := wal.EncodeRecord(sum, wal.Entry{Index: e.Index, Term: e.Term, Data: e.Data})
		m.Entries, m.Records, sum = append(m.Entries, e), append(m.Records, rec), s
	}
	return m
}

// TestStaleProgressAfterTruncation: a progress report taken before a suffix
// truncation and delivered after it must not make the core count the new,
// unsynced entries durable. The core refuses it because the durable entry's
// term differs; with BugAdvanceLastTerm it does not. The replica's
// truncation sync would hide the report; raft.BugTruncationNotSynced turns
// that hold off so the report reaches the core.
func TestStaleProgressAfterTruncation(t *testing.T) {
	for _, bug := range []Bug{0, BugAdvanceLastTerm} {
		tr := &testReplica{t: t, disk: vfs.NewMemFS(vfs.MemConfig{Seed: 2}), net: &capture{}, sm: &entries{}}
		w, rec, err := wal.Open(tr.disk, "/d", wal.Options{Stepped: true, Clock: &fakeClock{now: time.Unix(1, 0)}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		cfg := raft.Config{ID: 2, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1,
			Rand: rand.New(rand.NewPCG(2, 1)), TestingBugs: raft.BugTruncationNotSynced}
		r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: tr.sm, Transport: tr.net, Logger: quiet, TestingBugs: bug})
		if err != nil {
			t.Fatal(err)
		}
		tr.w, tr.r = w, r
		tr.flush()
		deliver := func(m Message) { tr.r.Handle(Event{Kind: EventMessage, Msg: m}); tr.flush() }
		deliver(tr.app(2, 0, 0, nil))                     // term 2
		deliver(tr.app(2, 0, 0, []uint64{2, 2, 2, 2, 2})) // 1..5 durable, and the core knows
		stale := tr.w.Progress()
		if stale.DurableIndex != 5 || stale.DurableTerm != 2 {
			t.Fatalf("durable %d/%d, want 5/2", stale.DurableIndex, stale.DurableTerm)
		}
		deliver(tr.app(3, 5, 2, nil)) // a leader of term 3
		// It replaces 3..5 with entries of its own, 3..6; nothing is synced.
		tr.r.Handle(Event{Kind: EventMessage, Msg: tr.app(3, 2, 2, []uint64{3, 3, 3, 3})})
		if d := tr.w.Progress().DurableIndex; d != 2 {
			t.Fatalf("WAL durable %d after the truncation, want 2", d)
		}
		tr.r.Handle(Event{Kind: EventWAL, Progress: tr.w.Progress()}) // a fresh report
		tr.r.Handle(Event{Kind: EventWAL, Progress: stale})           // and the stale one, late
		core, disk := tr.r.Status().Durable, tr.w.Progress().DurableIndex
		switch {
		case bug == 0 && core > disk:
			t.Fatalf("the core counts %d durable, the WAL %d: the stale report passed", core, disk)
		case bug != 0 && core <= disk:
			t.Fatalf("with %v the stale report should pass (core %d, WAL %d)", bug, core, disk)
		}
	}
}
