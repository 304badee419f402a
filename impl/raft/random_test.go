package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
)

// TestRandomized runs seeded randomized behaviours of the harness with
// every fault, checks the cluster invariants after every step, and replays
// every trace with spec.CheckTrace.
func TestRandomized(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	events := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.DefaultRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range c.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		if err := spec.CheckTrace(c.Events); err != nil {
			t.Errorf("seed %d: spec.CheckTrace rejects the trace (%d events): %v", seed, len(c.Events), err)
		}
		events += len(c.Events)
	}
	t.Logf("%d seeds, %d events, all traces accepted", seeds, events)
}
