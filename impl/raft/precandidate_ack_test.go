package raft

import "testing"

// A follower that becomes a pre-candidate stays in its term and keeps its
// leader's entries: what it accepted before still becomes acknowledgeable
// once durable, and it acknowledges it (a pre-vote changes no term).
func TestPreCandidateAcknowledgesPendingEntries(t *testing.T) {
	cfg := testConfig(3, NewMemoryStorage())
	cfg.PreVote = true
	n := mustNode(t, cfg, Boot{HardState: HardState{Term: 2}, Verdict: VerdictClean})
	app := Message{Type: MsgApp, From: 2, To: 3, Term: 2, PrevLogIndex: 0, PrevLogTerm: 0,
		Entries: []Entry{{Index: 1, Term: 2, Data: []byte("a")}, {Index: 2, Term: 2, Data: []byte("b")}}}
	if err := n.Step(app); err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if len(rd.Entries) != 2 {
		t.Fatalf("Ready hands %d entries, want 2", len(rd.Entries))
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if s := n.Status(); s.Role != RolePreCandidate || s.HardState.Term != 2 {
		t.Fatalf("after Campaign with PreVote: %v at term %d, want a pre-candidate at 2", s.Role, s.HardState.Term)
	}
	n.Ready()
	n.Advance(AdvanceInfo{DurableIndex: 2, DurableTerm: 2})
	rd = n.Ready()
	acked := false
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.To == 2 && m.Type == MsgAppResp && m.Success && m.MatchIndex == 2 {
			acked = true
		}
	}
	if !acked {
		t.Fatalf("no acknowledgment of 2 after it became durable: %+v", append(rd.Messages, rd.MessagesAfterPersist...))
	}
}
