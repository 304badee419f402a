package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// A pre-vote rejection from a voter in a later term than the one asked for
// (term+2 and beyond, not only term+1) tells the pre-candidate it missed a
// term: it campaigns for real at once, at term+1, so that the rejections of
// its real campaign bring it the newer term.
func TestPreVoteRejectionFromAFarLaterTerm(t *testing.T) {
	for _, ahead := range []uint64{1, 2, 5} {
		cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
			Storage: raft.NewMemoryStorage(), PreVote: true}
		n, err := raft.NewNode(cfg, raft.Boot{})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Campaign(); err != nil {
			t.Fatal(err)
		}
		term := n.Status().HardState.Term
		if err := n.Step(raft.Message{Type: raft.MsgPreVoteResp, From: 2, To: 1, Term: term + ahead, Granted: false}); err != nil {
			t.Fatal(err)
		}
		if st := n.Status(); st.Role != raft.RoleCandidate || st.HardState.Term != term+1 {
			t.Errorf("a pre-vote rejection %d terms ahead: %v at term %d, want a candidate at %d", ahead, st.Role, st.HardState.Term, term+1)
		}
	}
}
