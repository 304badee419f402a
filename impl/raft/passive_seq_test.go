package raft

import "testing"

// A passive member's success raises what counts as stale: a rejection it
// sent earlier (a lower Seq) that arrives after the success is ignored, as
// for a voter's responses, instead of sending the leader back to probing.
func TestPassiveSuccessMakesOlderRejectionsStale(t *testing.T) {
	n := fuzzLeader(t) // log 1/1 1/2 2/3 3/4
	n.Ready()
	term := n.Status().HardState.Term
	if err := n.Step(Message{Type: MsgAppRespPassive, From: 3, To: 1, Term: term, Success: true, MatchIndex: 4, Seq: 9}); err != nil {
		t.Fatal(err)
	}
	n.Ready()
	before := *n.progressOf(3)
	if err := n.Step(Message{Type: MsgAppRespPassive, From: 3, To: 1, Term: term, Success: false, HintIndex: 1, HintTerm: 1, Seq: 5}); err != nil {
		t.Fatal(err)
	}
	if pr := n.progressOf(3); pr.State != before.State || pr.Next != before.Next {
		t.Fatalf("a stale passive rejection (seq 5 after success 9) moved the progress: %v next %d, was %v next %d", pr.State, pr.Next, before.State, before.Next)
	}
}
