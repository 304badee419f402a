package raft

import (
	"errors"
	"testing"
)

// The ambiguous flag travels only on a granted vote response: the codec
// keeps it (flag bit 3), Validate refuses it on a refusal and on every other
// type.
func TestAmbiguousFlagOnTheWire(t *testing.T) {
	ok := Message{Type: MsgVoteResp, From: 2, To: 1, Term: 3, Granted: true, Ambiguous: true}
	got, err := UnmarshalMessage(MarshalMessage(&ok), 8, 1<<10)
	if err != nil || !got.Ambiguous || !got.Granted {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if err := Validate(&ok, 1, []NodeID{1, 2, 3}); err != nil {
		t.Fatalf("a marked grant refused: %v", err)
	}
	for name, m := range map[string]Message{
		"refusal":  {Type: MsgVoteResp, From: 2, To: 1, Term: 3, Ambiguous: true},
		"pre-vote": {Type: MsgPreVoteResp, From: 2, To: 1, Term: 3, Ambiguous: true},
		"vote":     {Type: MsgVote, From: 2, To: 1, Term: 3, Ambiguous: true},
		"app resp": {Type: MsgAppResp, From: 2, To: 1, Term: 3, Success: true, MatchIndex: 1, Ambiguous: true},
	} {
		if err := Validate(&m, 1, []NodeID{1, 2, 3}); err == nil {
			t.Errorf("%s marked ambiguous: accepted", name)
		}
	}
}

// candidate3 boots node 1 of {1,2,3} with hs and verdict and makes it a
// candidate of term 2.
func candidate3(t *testing.T, hs HardState, v Verdict, bugs Bug) *Node {
	t.Helper()
	cfg := testConfig(1, logOf(1), 1, 2, 3)
	cfg.TestingBugs = bugs
	n := mustNode(t, cfg, Boot{HardState: hs, Verdict: v})
	n.Ready()
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if s := n.Status(); s.Role != RoleCandidate || s.HardState.Term != 2 {
		t.Fatalf("not a candidate of term 2: %+v", s)
	}
	return n
}

func grant(t *testing.T, n *Node, from NodeID, ambiguous bool) {
	t.Helper()
	if err := n.Step(Message{Type: MsgVoteResp, From: from, To: 1, Term: 2, Granted: true, Ambiguous: ambiguous}); err != nil {
		t.Fatal(err)
	}
}

// Marked grants elect only unanimously (spec electedBy): a quorum of
// unmarked grants, or every voter. Fails if won() counts marked grants
// as any (the story ambiguous-tail.txt's lost write).
func TestAmbiguousGrantsCountOnlyUnanimously(t *testing.T) {
	clean := HardState{Term: 1}
	n := candidate3(t, clean, VerdictClean, 0)
	grant(t, n, 2, true)
	if n.Status().Role == RoleLeader {
		t.Fatal("elected by its own grant and a marked one: a quorum, but not of unmarked grants")
	}
	grant(t, n, 3, true)
	if n.Status().Role != RoleLeader {
		t.Fatal("not elected by every voter")
	}
	n = candidate3(t, clean, VerdictClean, 0)
	grant(t, n, 3, false)
	if n.Status().Role != RoleLeader {
		t.Fatal("not elected by a quorum of unmarked grants")
	}
	// An AMBIGUOUS candidate's own grant is marked: it needs both others;
	// elected, it is CLEAN.
	n = candidate3(t, HardState{Term: 1}, VerdictAmbiguous, 0)
	grant(t, n, 2, false)
	if n.Status().Role == RoleLeader {
		t.Fatal("AMBIGUOUS candidate elected by its own marked grant and one other")
	}
	grant(t, n, 3, false)
	if s := n.Status(); s.Role != RoleLeader || s.Verdict != "CLEAN" || s.HardState.TruncatedAtTerm != 0 || s.HardState.Ambiguous {
		t.Fatalf("AMBIGUOUS candidate with two unmarked grants: %+v, want a CLEAN leader", s)
	}
	if rd := n.Ready(); !rd.HardStateChanged || rd.HardState.Ambiguous || rd.HardState.TruncatedAtTerm != 0 {
		t.Fatalf("the repair is not handed out to persist: %+v", rd.HardState)
	}
}

// An AMBIGUOUS voter grants against its durable log and marks the grant;
// with BugAmbiguousWithholdsVote it refuses, as a TRUNCATED one. A
// TRUNCATED voter refuses, and an AMBIGUOUS boot of it stays TRUNCATED.
func TestAmbiguousVoterMarksItsGrant(t *testing.T) {
	req := Message{Type: MsgVote, From: 2, To: 1, Term: 2, LastLogIndex: 1, LastLogTerm: 1}
	for _, c := range []struct {
		name            string
		hs              HardState
		bugs            Bug
		granted, marked bool
	}{
		{"ambiguous", HardState{Term: 1}, 0, true, true},
		{"ambiguous withholds", HardState{Term: 1}, BugAmbiguousWithholdsVote, false, false},
		{"truncated before", HardState{Term: 1, TruncatedAtTerm: 1}, 0, true, true},
		{"truncated before withholds", HardState{Term: 1, TruncatedAtTerm: 1}, BugTruncatedWithholdsVote, false, false},
		{"truncated before unmarked", HardState{Term: 1, TruncatedAtTerm: 1}, BugTruncatedMemberVotes, true, false},
		{"tail clean", HardState{Term: 1}, BugAmbiguousTailClean, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(1, logOf(1), 1, 2, 3)
			cfg.TestingBugs = c.bugs
			n := mustNode(t, cfg, Boot{HardState: c.hs, Verdict: VerdictAmbiguous})
			n.Ready()
			if err := n.Step(req); err != nil {
				t.Fatal(err)
			}
			rd := n.Ready()
			if len(rd.MessagesAfterPersist) != 1 {
				t.Fatalf("answers %v", rd.MessagesAfterPersist)
			}
			if m := rd.MessagesAfterPersist[0]; m.Granted != c.granted || m.Ambiguous != c.marked {
				t.Fatalf("answer %v, want granted %v marked %v", m, c.granted, c.marked)
			}
		})
	}
}

// A boot hard state marked ambiguous without its term is refused.
func TestBootAmbiguousWithoutTerm(t *testing.T) {
	_, err := NewNode(testConfig(1, logOf(1)), Boot{HardState: HardState{Term: 1, Ambiguous: true}, Verdict: VerdictClean})
	if err == nil {
		t.Fatal("accepted")
	}
	if errors.Is(err, ErrFenced) {
		t.Fatal(err)
	}
}

// An AMBIGUOUS member repaired by its peers (Config.PeerRepair) is CLEAN:
// the release clears the AMBIGUOUS flag with the mark. Fails, with the
// hard-state invariant (Ambiguous without TruncatedAtTerm), if the
// release clears only the mark (the seam of issue 18's repair and the
// ambiguous tail; found by the bug catalogue's repair-votes-early row).
func TestAmbiguousRepairedByPeers(t *testing.T) {
	cfg := testConfig(1, logOf(1), 1, 2, 3)
	cfg.PeerRepair, cfg.PreVote = true, true
	n := mustNode(t, cfg, Boot{HardState: HardState{Term: 1}, Verdict: VerdictAmbiguous})
	asked := map[NodeID]uint64{}
	for k := 0; k < 20*cfg.ElectionTick && len(asked) < 2; k++ {
		n.Tick()
		rd := n.Ready()
		for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
			if m.Type == MsgRepair {
				asked[m.To] = m.Term
			}
		}
		n.Advance(AdvanceInfo{})
	}
	if len(asked) != 2 {
		t.Fatalf("asked %v, want both peers", asked)
	}
	if s := n.Status(); s.Verdict != "AMBIGUOUS" {
		t.Fatalf("before the answers: %+v", s)
	}
	for _, from := range []NodeID{2, 3} {
		if err := n.Step(Message{Type: MsgRepairResp, From: from, To: 1, Term: n.Status().HardState.Term, LastLogTerm: 1, LastLogIndex: 1}); err != nil {
			t.Fatal(err)
		}
	}
	rd := n.Ready()
	n.Advance(AdvanceInfo{})
	if s := n.Status(); s.Verdict != "CLEAN" || s.HardState.Ambiguous || s.HardState.TruncatedAtTerm != 0 {
		t.Fatalf("after both peers answered: %+v", s)
	}
	if !rd.HardStateChanged || rd.HardState.Ambiguous || rd.HardState.TruncatedAtTerm != 0 {
		t.Fatalf("the release is not handed out to persist: %+v", rd.HardState)
	}
}
