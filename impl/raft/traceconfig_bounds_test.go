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
