package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// A pre-vote rejection from a voter already in the term the pre-candidate
// asks for makes it campaign for real at that term; the rejection is about
// the pre-vote and must not be counted against the real campaign, in which
// that voter may still grant. So one real rejection (of three voters) leaves
// the node a candidate, and the first voter's real grant then elects it.
func TestPreVoteRejectionNotCountedInTheCampaign(t *testing.T) {
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
		Storage: raft.NewMemoryStorage(), PreVote: true}
	n, err := raft.NewNode(cfg, raft.Boot{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	if st.Role != raft.RolePreCandidate {
		t.Fatalf("after Campaign with PreVote: %v, want a pre-candidate", st.Role)
	}
	term := st.HardState.Term + 1
	step := func(m raft.Message) {
		t.Helper()
		if err := n.Step(m); err != nil {
			t.Fatalf("step %+v: %v", m, err)
		}
	}
	step(raft.Message{Type: raft.MsgPreVoteResp, From: 2, To: 1, Term: term, Granted: false})
	if st := n.Status(); st.Role != raft.RoleCandidate || st.HardState.Term != term {
		t.Fatalf("after a pre-vote rejection of term %d: %v at term %d, want a candidate at %d", term, st.Role, st.HardState.Term, term)
	}
	step(raft.Message{Type: raft.MsgVoteResp, From: 3, To: 1, Term: term, Granted: false})
	if st := n.Status(); st.Role != raft.RoleCandidate {
		t.Fatalf("one real rejection of three voters: %v, want still a candidate (the pre-vote rejection is not a vote)", st.Role)
	}
}
