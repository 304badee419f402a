package coretrace

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
)

// scriptDir holds the core's scenario scripts.
var scriptDir = filepath.Join("..", "..", "impl", "raft", "testdata")

func scripts(t *testing.T) []string {
	t.Helper()
	paths, err := rafttest.Scripts(scriptDir)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func runScript(t *testing.T, path string, bugs raft.Bug) rafttest.ScriptResult {
	t.Helper()
	res, err := rafttest.RunScript(path, rafttest.ScriptOptions{Bugs: bugs, CheckTrace: spec.CheckTrace})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScenarioTraces runs every script with spec.CheckTrace as its trace
// checker: the output must match (impl/raft's TestScenarios, -rewrite), the
// cluster invariants must hold, and the spec must accept the trace at every
// check command and at the end.
func TestScenarioTraces(t *testing.T) {
	for _, path := range scripts(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			res := runScript(t, path, 0)
			for _, m := range res.Mismatches {
				t.Error(m)
			}
			for _, v := range res.Violations {
				t.Errorf("invariant violated: %s", v)
			}
			if res.TraceErr != nil {
				t.Errorf("spec.CheckTrace rejects the trace (%d events): %v", res.Events, res.TraceErr)
			}
		})
	}
}

// repairScriptDir holds the scenarios of the repair from peers (docs/repair.md).
var repairScriptDir = filepath.Join(scriptDir, "repair")

// TestRepairScenarioTraces replays the repair scenarios (peerrepair: the
// repair's steps of the production profile, spec repairprod.go) with
// spec.CheckTrace: every trace must be accepted.
func TestRepairScenarioTraces(t *testing.T) {
	paths, err := rafttest.Scripts(repairScriptDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			res := runScript(t, path, 0)
			for _, m := range res.Mismatches {
				t.Error(m)
			}
			for _, v := range res.Violations {
				t.Errorf("invariant violated: %s", v)
			}
			if res.TraceErr != nil {
				t.Errorf("spec.CheckTrace rejects the trace (%d events): %v", res.Events, res.TraceErr)
			}
			if res.Events == 0 {
				t.Error("no trace events checked")
			}
		})
	}
}

// defenceInDepth are the switches whose rule the spec shows to be defence
// in depth: no invariant breaks with the switch alone (scripts/bugs.sh,
// docs/durable-raft.md). For them a scenario fails by printing what the
// rule changes (a vote, a campaign), not by an invariant.
// learned-commit-unclamped and ambiguous-withholds-vote break liveness, not an
// invariant (raftspec liveness finds the stuck cluster; learned_commit_clamp.txt and
// ambiguous_withholds_vote.txt print it); so does truncated-withholds-vote, the
// rule before marked votes (spec without -marked-votes: TestLivenessTruncatedAndAmbiguous,
// the simulator's wedged seeds), whose scenarios print the refused votes.
var defenceInDepth = raft.BugCandidateAdvertisesAppended | raft.BugNoVoterLearnedFloor | raft.BugNoPromotionFence |
	raft.BugTruncationNotSynced | raft.BugLearnedCommitUnclamped | raft.BugAmbiguousWithholdsVote | raft.BugTruncatedWithholdsVote

// TestSeedBugsFailScenarios re-introduces each seed bug through its
// test-only switch (the names of spec's -bug switches) and requires that a
// scenario then fails: by breaking a cluster invariant, or, for the
// defence-in-depth and reporting switches, at least by printing another outcome. The
// trace of a run with a switch declares the switch, and the spec with the
// same switch must still accept it: the switch changes the core exactly as
// it changes the spec.
func TestSeedBugsFailScenarios(t *testing.T) {
	all := scripts(t)
	repairPaths, err := rafttest.Scripts(repairScriptDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, bug := range raft.AllBugs() {
		paths := all
		switch {
		case bug == raft.BugRepairIgnoresTerm:
			continue // no scenario stages its story (impl/raft TestRepairBugSwitches); TestRepairBugTraces checks its traces
		case bug&raft.RepairBugs != 0:
			paths = repairPaths // the repair's scenarios, with peerrepair
		}
		if bug&raft.WipeBugs != 0 {
			continue // the scripts boot no first-boot record; impl/raft's TestFirstBoot* and conformance/proc's TestProcessWipedMember show them
		}
		t.Run(bug.String(), func(t *testing.T) {
			var broken, changed []string
			for _, path := range paths {
				res := runScript(t, path, bug)
				if len(res.Violations) > 0 {
					broken = append(broken, filepath.Base(path)+": "+res.Violations[0])
				}
				if len(res.Mismatches) > 0 {
					changed = append(changed, filepath.Base(path))
				}
				if res.TraceErr != nil {
					t.Errorf("%s: with -bug %v the spec rejects the trace: %v", path, bug, res.TraceErr)
				}
			}
			switch {
			case len(broken) > 0:
				t.Logf("invariants broken in %d scenarios:\n%s", len(broken), strings.Join(broken, "\n"))
			case bug&(defenceInDepth|raft.ReportingBugs) != 0 && len(changed) > 0:
				t.Logf("defence in depth: no invariant breaks; %d scenarios print another outcome: %s", len(changed), strings.Join(changed, ", "))
			default:
				t.Fatalf("no scenario fails with %v (outputs changed in %v)", bug, changed)
			}
		})
	}
}

// The core's switches are spec's -bug switches of the durable profile's fixes, name
// for name, in the same order: a trace declares its switches by name and the spec
// must understand them, and a fix added to one side without the other is drift.
// spec's switches of raft.tla's own rules (the classic bugs, make reach) have no
// counterpart in the core, and the core's reporting switches (raft.ReportingBugs)
// none in spec. The membership switches (spec.MembershipBugs) are the core's too
// (issue 18), and so are the power-loss switches (spec.PowerLossBugs: the core halves,
// issue 10 item 2).
func TestBugSwitchesAreSpecs(t *testing.T) {
	var names []string
	for _, bug := range raft.AllBugs() {
		// truncated-withholds-vote is spec's rule without -marked-votes: a
		// trace declares it by the absence of markedVotes, not by name.
		if bug&raft.ReportingBugs == 0 && bug != raft.BugTruncatedWithholdsVote {
			names = append(names, bug.String())
		}
	}
	fixes := slices.DeleteFunc(spec.AllBugs(), func(n string) bool {
		return slices.Contains(spec.ClassicBugs(), n)
	})
	if diff := cmp.Diff(fixes, names); diff != "" {
		t.Fatalf("impl/raft bug switches differ from spec's (-spec +impl):\n%s", diff)
	}
}
