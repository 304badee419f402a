package raft

import (
	"errors"
	"testing"
)

// TestFenceStateDiverged: a leader fenced by the state check steps down;
// a fenced member refuses to campaign, refuses pre-votes and answers no
// vote request, and says why in its status; without the fence the same
// member grants the vote (the fence is what refuses it).
func TestFenceStateDiverged(t *testing.T) {
	n := fuzzLeader(t)
	if n.Status().Role != RoleLeader {
		t.Fatalf("not leader: %+v", n.Status())
	}
	n.FenceStateDiverged("state hash at 5 differs from the majority's")
	st := n.Status()
	if st.Role == RoleLeader || st.StateFenced == "" {
		t.Fatalf("after the fence: role %v, StateFenced %q", st.Role, st.StateFenced)
	}
	if rd := n.Ready(); alertsOf(rd, AlertFenced) != 1 {
		t.Fatalf("no FENCED alert: %+v", rd.Alerts)
	}
	if err := n.Campaign(); !errors.Is(err, ErrFenced) {
		t.Fatalf("campaign: %v, want ErrFenced", err)
	}
	for _, fenced := range []bool{true, false} {
		f := mustNode(t, testConfig(3, logOf(1, 1, 2)), Boot{HardState: HardState{Term: 2}, Verdict: VerdictClean})
		if fenced {
			f.FenceStateDiverged("test")
		}
		f.Ready()
		if err := f.Step(Message{Type: MsgPreVote, From: 2, To: 3, Term: 3, LastLogIndex: 3, LastLogTerm: 2}); err != nil {
			t.Fatal(err)
		}
		if err := f.Step(Message{Type: MsgVote, From: 2, To: 3, Term: 3, LastLogIndex: 3, LastLogTerm: 2}); err != nil {
			t.Fatal(err)
		}
		rd := f.Ready()
		var preGrant, voteAnswered bool
		for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
			switch m.Type {
			case MsgPreVoteResp:
				preGrant = m.Granted
			case MsgVoteResp:
				voteAnswered = true
			}
		}
		if fenced && (preGrant || voteAnswered) {
			t.Fatalf("a fenced member granted a pre-vote (%v) or answered a vote (%v)", preGrant, voteAnswered)
		}
		if !fenced && (!preGrant || !voteAnswered) {
			t.Fatalf("unfenced: pre-vote granted %v, vote answered %v (the test's messages should be granted)", preGrant, voteAnswered)
		}
	}
}
