package raft_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
)

// TestRandomized runs seeded randomized behaviours of the harness with
// every fault and checks the cluster invariants after every step.
// conformance/coretrace replays the trace of every one of these seeds with
// spec.CheckTrace.
func TestRandomized(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	events, reads := 0, 0
	actions := map[string]int{}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.DefaultRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range c.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		events += len(c.Events)
		reads += c.ReadsAnswered
		for _, e := range c.Events {
			actions[e.Action+"/"+e.Branch]++
		}
	}
	t.Logf("%d seeds, %d events; %d reads answered; steps: %v", seeds, events, reads, actions)
	// Coverage: every kind of step the core takes happened somewhere.
	for _, a := range []string{"Crash/", "Corrupt/", "Flush/", "FlushTo/", "StepDown/", "UpdateTerm/", "DropStaleResponse/",
		"DuplicateMessage/", "DropMessage/", "BecomeLeader/", "AdvanceCommitIndex/", "SendAppendEntries/",
		"HandleAppendEntriesBatch/reject", "HandleAppendEntriesBatch/conflict", "HandleAppendEntriesBatch/append",
		"HandleAppendEntriesBatch/already-done", "HandleAppendEntriesBatch/return-to-follower",
		"HandleAppendEntriesResponseMax/", "HandleRequestVoteRequest/", "HandleRequestVoteResponse/"} {
		if actions[a] == 0 {
			t.Errorf("no randomized run took %s", a)
		}
	}
	if reads == 0 {
		t.Error("no read answered")
	}
}

// TestRandomizedHardStateLoss: the fault mix of TestRandomized plus members
// losing their hard state (rafttest.HardStateLossRandom; at most as many
// members without a vote as corruptions are allowed): the cluster
// invariants hold, the cluster recovers, and the passive members' reports
// reach the leaders.
func TestRandomizedHardStateLoss(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	losses, reports := 0, 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.HardStateLossRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range c.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		losses += c.HardStateLosses
		reports += c.PassiveReports
	}
	t.Logf("%d seeds: %d hard states lost, %d passive reports delivered", seeds, losses, reports)
	if losses == 0 || reports == 0 {
		t.Fatalf("%d losses, %d passive reports: the fault never ran", losses, reports)
	}
}

// TestRandomizedMembership: the fault mix of TestRandomized (without
// corruptions) on five nodes of which three start as the cluster, with
// random single-server changes (rafttest.MembershipRandom): the cluster
// invariants hold across changes, the cluster recovers, and changes of
// every kind were accepted. conformance/coretrace replays these traces.
func TestRandomizedMembership(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	changes := 0
	actions := map[string]int{}
	kinds := map[raft.ConfChangeKind]int{}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.MembershipRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range c.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		changes += c.ConfigChanges
		for k, v := range c.ChangeKinds {
			kinds[k] += v
		}
		for _, e := range c.Events {
			actions[e.Action]++
		}
	}
	t.Logf("%d seeds: %d configuration changes %v, %d ChangeConfig events, %d StepDown", seeds, changes, kinds, actions["ChangeConfig"], actions["StepDown"])
	// Promotions are the rarest: a learner must have caught up with a
	// leader that committed in its term and has no change pending, under
	// the faults (the scenario scripts cover the path step by step).
	for k, least := range map[raft.ConfChangeKind]int{raft.ConfAddLearner: seeds, raft.ConfPromote: seeds / 4, raft.ConfRemove: seeds / 4} {
		if kinds[k] < least {
			t.Errorf("%d changes %v in %d seeds, want at least %d", kinds[k], k, seeds, least)
		}
	}
}
