package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// A vote granted in an earlier term is stale: a candidate of a later term
// must not count it (with it, 2 of 3 would elect it), traced or not, and a
// traced node records it as DropStaleResponse, the spec action that
// consumes it.
func TestStaleVoteResponseIsDropped(t *testing.T) {
	for _, traced := range []bool{false, true} {
		sink := &memorySink{}
		cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
			Storage: raft.NewMemoryStorage()}
		if traced {
			cfg.Trace = sink
		}
		n, err := raft.NewNode(cfg, raft.Boot{})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := n.Campaign(); err != nil {
				t.Fatal(err)
			}
		}
		st := n.Status()
		if st.Role != raft.RoleCandidate || st.HardState.Term < 2 {
			t.Fatalf("traced %v: after two campaigns: %v at term %d, want a candidate at term 2 or more", traced, st.Role, st.HardState.Term)
		}
		stale := raft.Message{Type: raft.MsgVoteResp, From: 2, To: 1, Term: st.HardState.Term - 1, Granted: true}
		if err := n.Step(stale); err != nil {
			t.Fatalf("traced %v: step: %v", traced, err)
		}
		if got := n.Status(); got.Role != raft.RoleCandidate || got.HardState.Term != st.HardState.Term {
			t.Errorf("traced %v: after a stale grant: %v at term %d, want still a candidate at term %d", traced, got.Role, got.HardState.Term, st.HardState.Term)
		}
		if !traced {
			continue
		}
		found := false
		for _, e := range sink.events {
			if e.Action == "DropStaleResponse" {
				found = true
			}
		}
		if !found {
			t.Errorf("no DropStaleResponse event in the trace of a stale vote response")
		}
	}
}

// An AppendEntries response of an earlier term is dropped the same way,
// traced as DropStaleResponse, and without a tracer nothing is traced.
func TestStaleAppendResponseIsDropped(t *testing.T) {
	for _, traced := range []bool{false, true} {
		sink := &memorySink{}
		cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
			Storage: raft.NewMemoryStorage()}
		if traced {
			cfg.Trace = sink
		}
		n, err := raft.NewNode(cfg, raft.Boot{})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := n.Campaign(); err != nil {
				t.Fatal(err)
			}
		}
		st := n.Status()
		if err := n.Step(raft.Message{Type: raft.MsgAppResp, From: 2, To: 1, Term: st.HardState.Term - 1, Success: true, MatchIndex: 5}); err != nil {
			t.Fatalf("traced %v: step: %v", traced, err)
		}
		if got := n.Status(); got.Role != st.Role || got.HardState != st.HardState {
			t.Errorf("traced %v: a stale response changed the node: %+v, was %+v", traced, got, st)
		}
		if !traced {
			continue
		}
		found := false
		for _, e := range sink.events {
			found = found || e.Action == "DropStaleResponse"
		}
		if !found {
			t.Errorf("no DropStaleResponse event in the trace of a stale AppendEntries response")
		}
	}
}
