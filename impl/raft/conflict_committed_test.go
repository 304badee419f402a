package raft

import "testing"

// A leader whose entries conflict with the follower's log at or below its
// commit index breaks the protocol (a committed entry is never replaced):
// the follower alerts and keeps its log, also when the conflict is exactly at
// the commit index.
func TestConflictAtCommitIndexRefused(t *testing.T) {
	n := mustNode(t, testConfig(3, logOf(1, 1, 1)), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean})
	if err := n.Step(Message{Type: MsgApp, From: 2, To: 3, Term: 1, PrevLogIndex: 3, PrevLogTerm: 1, Commit: 3, LeaderCommit: 3}); err != nil {
		t.Fatal(err)
	}
	n.Ready()
	if c := n.Status().Commit; c != 3 {
		t.Fatalf("commit %d after the leader's heartbeat, want 3", c)
	}
	bad := Message{Type: MsgApp, From: 1, To: 3, Term: 2, PrevLogIndex: 2, PrevLogTerm: 1, Commit: 3, LeaderCommit: 3,
		Entries: []Entry{{Index: 3, Term: 2, Data: []byte("x")}}}
	if err := n.Step(bad); err != nil {
		t.Fatal(err)
	}
	if term, ok := n.log.term(3); !ok || term != 1 {
		t.Fatalf("entry 3 after a conflicting append at the commit index: term %d (%v), want the committed term 1", term, ok)
	}
	if alertsOf(n.Ready(), AlertProtocol) != 1 {
		t.Fatal("no protocol alert for a conflict at the commit index")
	}
}
