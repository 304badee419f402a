package raft

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft/tracker"
)

// A passive member (hard state lost) being sent a snapshot that reports a
// match at or past the snapshot has it: the leader streams to it again from
// just after the reported match, without resending what it holds.
func TestPassiveReportEndsSnapshotState(t *testing.T) {
	n := fuzzLeader(t) // log 1/1 1/2 2/3 3/4
	n.Ready()
	n.progressOf(3).BecomeSnapshot(2)
	if err := n.Step(Message{Type: MsgAppRespPassive, From: 3, To: 1, Term: n.Status().HardState.Term, Success: true, MatchIndex: 3}); err != nil {
		t.Fatal(err)
	}
	if pr := n.progressOf(3); pr.State != tracker.StateReplicate {
		t.Fatalf("after a passive report of 3 past the snapshot at 2: state %v, want replicate", pr.State)
	}
	rd := n.Ready()
	var sent []Message
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.To == 3 && m.Type == MsgApp {
			sent = append(sent, m)
		}
	}
	if len(sent) != 1 || sent[0].PrevLogIndex != 3 {
		t.Fatalf("sent %+v to 3, want one AppendEntries after its match 3", sent)
	}
}
