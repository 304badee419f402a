package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// TraceConfig refuses every budget outside [0, trace.MaxIndex], each on its
// own, and takes the bounds themselves.
func TestTraceConfigBudgetBounds(t *testing.T) {
	voters := []raft.NodeID{1, 2, 3}
	for name, p := range map[string]raft.TraceParams{
		"crashes -1":         {Crashes: -1},
		"corruptions -1":     {Corruptions: -1},
		"crashes beyond":     {Crashes: trace.MaxIndex + 1},
		"corruptions beyond": {Corruptions: trace.MaxIndex + 1},
		"bad commits -1":     {BadCommits: -1},
		"bad commits beyond": {BadCommits: trace.MaxIndex + 1},
	} {
		p.Voters = voters
		if _, err := raft.TraceConfig(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := raft.TraceParams{Voters: voters, Crashes: trace.MaxIndex, Corruptions: trace.MaxIndex, BadCommits: trace.MaxIndex}
	if _, err := raft.TraceConfig(p); err != nil {
		t.Errorf("budgets at trace.MaxIndex: %v", err)
	}
}

// A trace needs at least one voter and at most trace.MaxServers.
func TestTraceConfigVoters(t *testing.T) {
	if _, err := raft.TraceConfig(raft.TraceParams{}); err == nil {
		t.Error("no voters: accepted")
	}
	var many []raft.NodeID
	for i := range trace.MaxServers + 1 {
		many = append(many, raft.NodeID(i+1))
	}
	if _, err := raft.TraceConfig(raft.TraceParams{Voters: many}); err == nil {
		t.Errorf("%d voters: accepted", len(many))
	}
	if _, err := raft.TraceConfig(raft.TraceParams{Voters: many[:trace.MaxServers]}); err != nil {
		t.Errorf("%d voters: %v", trace.MaxServers, err)
	}
}
