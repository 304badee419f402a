package raft

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The message fuzz targets. Each decoded or built message goes to a
// follower (as addressed) and to a leader (readdressed to it), with two
// properties besides "nothing panics" (the nodes' own invariants are
// asserted after every input):
//
//   - a message the gate refuses (ErrInvalidMessage) changes nothing in the
//     node: status, hard state, log, timers, votes, and nothing to hand out;
//   - after an accepted one the node is within the documented ranges: terms
//     in [1, TermMax], indexes within IndexMax, commit and durable within
//     the log, entry terms within the current term, progress within the
//     leader's log, and every message it sends passes its recipient's gate.

// FuzzMessage feeds arbitrary frames to the decoder and the decoded ones to
// a follower and a leader: what decodes re-encodes to the same bytes, and
// the properties above hold.
func FuzzMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(MarshalMessage(&m))
	}
	hostile := Message{Type: MsgApp, From: 1, To: 2, Term: math.MaxUint64, PrevLogIndex: math.MaxUint64, LeaderCommit: math.MaxUint64}
	f.Add(MarshalMessage(&hostile))
	wrap := Message{Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: math.MaxUint64, PrevLogTerm: 3, Entries: []Entry{{Index: 0, Term: 3}}}
	f.Add(MarshalMessage(&wrap))
	// Configuration entries: one that removes the follower and adds a
	// learner, and one that does not decode.
	conf := Message{Type: MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 3, PrevLogTerm: 2, Commit: 3, LeaderCommit: 3, Entries: []Entry{
		{Index: 4, Term: 3, Data: EncodeMembership(Membership{Voters: []NodeID{1, 3}, Learners: []NodeID{9}, Removed: []NodeID{2}})}}}
	f.Add(MarshalMessage(&conf))
	conf.Entries[0].Data = append(EncodeMembership(Membership{Voters: []NodeID{1}}), 0)
	f.Add(MarshalMessage(&conf))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := UnmarshalMessage(b, 256, 1<<20)
		if err != nil {
			return
		}
		if string(MarshalMessage(&m)) != string(b) {
			t.Fatal("decoded frame does not re-encode to itself")
		}
		stepFuzzed(t, m)
	})
}

// FuzzStepFields builds messages field by field (past the checksum that
// makes FuzzMessage's mutations mostly fail) and steps them into a follower
// and a leader, then ticks the leader: the properties above hold.
func FuzzStepFields(f *testing.F) {
	f.Add(uint8(MsgApp), uint64(3), uint64(1), uint64(1), uint64(2), uint64(3), uint8(2), uint64(1), false)
	f.Add(uint8(MsgAppResp), uint64(2), uint64(0), uint64(0), uint64(0), uint64(math.MaxUint64), uint8(0), uint64(1), true)
	f.Add(uint8(MsgVote), uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(1), uint64(0), uint64(0), uint8(0), uint64(0), false)
	f.Add(uint8(MsgApp), uint64(3), uint64(math.MaxUint64), uint64(3), uint64(0), uint64(0), uint8(1), uint64(3), false)
	f.Add(uint8(MsgAppRespPassive), uint64(3), uint64(3), uint64(0), uint64(0), uint64(7), uint8(0), uint64(0), true)
	f.Fuzz(func(t *testing.T, typ uint8, term, idx, idxTerm, commit, leaderCommit uint64, entries uint8, entryTerm uint64, flag bool) {
		// typ%9+1 reaches msgTypeEnd too: an unknown type.
		m := Message{Type: MessageType(typ%9 + 1), From: 3, To: 2, Term: term}
		switch m.Type {
		case MsgVote, MsgPreVote:
			m.LastLogIndex, m.LastLogTerm, m.Transfer = idx, idxTerm, flag
		case MsgVoteResp, MsgPreVoteResp:
			m.Granted = flag
		case MsgApp:
			m.PrevLogIndex, m.PrevLogTerm, m.Commit, m.LeaderCommit = idx, idxTerm, commit, leaderCommit
			for k := 0; k < int(entries%8); k++ {
				m.Entries = append(m.Entries, Entry{Index: idx + 1 + uint64(k), Term: entryTerm})
			}
		case MsgAppResp, MsgAppRespPassive:
			m.Success, m.MatchIndex, m.HintIndex, m.HintTerm, m.Seq = flag, idx, commit, idxTerm, leaderCommit
		}
		leader := stepFuzzed(t, m)
		leader.Tick()
		checkRanges(t, leader, leader.Ready())
	})
}

// stepFuzzed feeds m to a follower (as addressed) and to a leader
// (readdressed to it) and checks the properties; it returns the leader.
func stepFuzzed(t *testing.T, m Message) *Node {
	follower := mustNode(t, testConfig(2, logOf(1, 1, 2)), Boot{HardState: HardState{Term: 2, LearnedCommit: 2}, Verdict: VerdictClean})
	follower.Ready()
	stepChecked(t, follower, m)
	leader := fuzzLeader(t)
	leader.Ready()
	m.To = 1
	stepChecked(t, leader, m)
	return leader
}

func fuzzLeader(t *testing.T) *Node {
	n := mustNode(t, testConfig(1, logOf(1, 1, 2), 1, 2, 3), Boot{HardState: HardState{Term: 2}, Verdict: VerdictClean})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if err := n.Step(Message{Type: MsgVoteResp, From: 2, To: 1, Term: 3, Granted: true}); err != nil {
		t.Fatal(err)
	}
	return n
}

// stepChecked steps m into n (whose Ready was handed out) and checks the
// property its outcome calls for.
func stepChecked(t *testing.T, n *Node, m Message) {
	t.Helper()
	before := snapshotOf(n)
	err := n.Step(m)
	if errors.Is(err, ErrInvalidMessage) {
		if diff := cmp.Diff(before, snapshotOf(n)); diff != "" {
			t.Fatalf("%v refused (%v) but changed the node (-before +after):\n%s", m, err, diff)
		}
		return
	}
	if err != nil {
		t.Fatalf("%v: %v", m, err)
	}
	checkRanges(t, n, n.Ready())
}

// nodeSnapshot is what a refused message must leave alone.
type nodeSnapshot struct {
	Status                                           Status
	Terms                                            []uint64 // of every entry, first..last
	HS, HSHanded                                     HardState
	ElectionElapsed, HeartbeatElapsed, LeaderSilent  int
	VotesGranted, VotesRejected                      int
	PendingAcks, Msgs, MsgsAfter, Alerts, ReadStates int
	Unstable, Handed, TruncateFrom, Seq, ReadRound   uint64
	HasReady, BcastPending                           bool
	PendingReads, WaitingReads, AlertElapsed, Ticks  int
}

func snapshotOf(n *Node) nodeSnapshot {
	s := nodeSnapshot{Status: n.Status(), HS: n.hs, HSHanded: n.hsHanded,
		ElectionElapsed: n.electionElapsed, HeartbeatElapsed: n.heartbeatElapsed, LeaderSilent: n.leaderSilentTicks,
		PendingAcks: len(n.pendingAcks), Msgs: len(n.msgs), MsgsAfter: len(n.msgsAfter), Alerts: len(n.alerts), ReadStates: len(n.readStates),
		Unstable: uint64(len(n.log.unstable)), Handed: n.log.handed, TruncateFrom: n.log.truncateFrom, ReadRound: n.readRound,
		HasReady: n.HasReady(), BcastPending: n.bcastPending,
		PendingReads: len(n.pendingReads), WaitingReads: len(n.waitingReads), AlertElapsed: n.alertElapsed, Ticks: int(n.ticks)}
	s.VotesGranted, s.VotesRejected, _ = n.trk.TallyVotes()
	for _, pr := range n.trk.Progress {
		s.Seq += pr.Seq
	}
	for i := n.log.first; i <= n.log.last; i++ {
		s.Terms = append(s.Terms, n.log.mustTerm(i))
	}
	return s
}

// checkRanges checks that n and the Ready it just handed out are within
// the documented ranges.
func checkRanges(t *testing.T, n *Node, rd Ready) {
	t.Helper()
	hs, l := n.hs, &n.log
	switch {
	case hs.Term < 1 || hs.Term > TermMax || hs.LearnedCommit > IndexMax || hs.TruncatedAtTerm > hs.Term:
		t.Fatalf("hard state %+v out of range", hs)
	case l.last > IndexMax || l.committed > l.last || l.durable > l.last:
		t.Fatalf("log last %d commit %d durable %d out of range", l.last, l.committed, l.durable)
	case rd.HardStateChanged && rd.HardState != hs:
		t.Fatalf("Ready hard state %+v, node %+v", rd.HardState, hs)
	}
	for i := l.first; i <= l.last; i++ {
		if tm := l.mustTerm(i); tm < 1 || tm > hs.Term {
			t.Fatalf("entry %d of term %d, current term %d", i, tm, hs.Term)
		}
	}
	for k, e := range rd.Entries {
		if e.Index > IndexMax || (k > 0 && e.Index != rd.Entries[k-1].Index+1) || e.Term > hs.Term {
			t.Fatalf("Ready entries %v", rd.Entries)
		}
	}
	for _, e := range rd.Committed {
		if e.Index > l.committed {
			t.Fatalf("committed entry %d beyond commit %d", e.Index, l.committed)
		}
	}
	for id, p := range n.Status().Progress {
		if p.Next < 1 || p.Next > l.last+1 || p.Match > l.last {
			t.Fatalf("progress of %d: %+v with last %d", id, p, l.last)
		}
	}
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if err := Validate(&m, m.To, nil); err != nil {
			t.Fatalf("the node sends %v, which its recipient refuses: %v", m, err)
		}
	}
}
