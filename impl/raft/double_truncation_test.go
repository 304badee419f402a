package raft

import "testing"

// Two conflicting appends between Readys, the second truncating below the
// first: the next Ready tells the storage to remove the entries from the
// lower point, where the log now ends, not from the first one's.
func TestTwoTruncationsBeforeReady(t *testing.T) {
	n := mustNode(t, testConfig(3, logOf(1, 1, 1, 1, 1, 1)), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean})
	n.Ready()
	steps := []Message{
		{Type: MsgApp, From: 2, To: 3, Term: 2, PrevLogIndex: 4, PrevLogTerm: 1, Entries: []Entry{{Index: 5, Term: 2}}},
		{Type: MsgApp, From: 1, To: 3, Term: 3, PrevLogIndex: 2, PrevLogTerm: 1, Entries: []Entry{{Index: 3, Term: 3}}},
	}
	for _, m := range steps {
		if err := n.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	rd := n.Ready()
	if rd.TruncateFrom != 3 {
		t.Fatalf("Ready.TruncateFrom %d after conflicts at 5 and then 3, want 3", rd.TruncateFrom)
	}
	if len(rd.Entries) != 1 || rd.Entries[0].Index != 3 || rd.Entries[0].Term != 3 {
		t.Fatalf("Ready.Entries %+v, want the term-3 entry at 3", rd.Entries)
	}
}
